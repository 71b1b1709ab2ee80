"""The npm SDKs' batch calls (``@anthropic-ai/sdk`` messages.batches, ``openai`` files and
batches) against the real server on a scripted model: no model loads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.servers import cli, free_port, start_server, stop, wait_healthy

JS = Path(__file__).resolve().parents[1] / "js"
MODEL = "b3os/scripted"


def test_batches_with_the_npm_sdks(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps({"replies": [{"text": "Batched hello.", "repeat": True}]}))
    config = tmp_path / "serve.toml"
    config.write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\nscript = "{script}"\n')
    home = tmp_path / "home"
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port, "--config", str(config))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        env = {**os.environ, "B3OS_BASE_URL": root + "/v1/infer", "B3OS_API_KEY": key,
               "B3OS_MODEL": MODEL}
        done = subprocess.run([str(JS / "node_modules" / ".bin" / "tsx"), "batches_live.ts"],
                              cwd=JS, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1])["ok"] is True
    finally:
        stop(process)
