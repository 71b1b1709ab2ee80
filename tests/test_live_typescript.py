"""The official TypeScript SDK (@anthropic-ai/sdk) against the live server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

JS = Path(__file__).resolve().parent / "js"
MODEL = "b3os/smollm2-135m-instruct"


def test_streaming_tools_and_thinking_with_the_typescript_sdk(live):
    env = {**os.environ, "B3OS_BASE_URL": live.base_url, "B3OS_API_KEY": live.key,
           "B3OS_MODEL": MODEL}
    done = subprocess.run([str(JS / "node_modules" / ".bin" / "tsx"), "anthropic_live.ts"],
                          cwd=JS, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["ok"] is True
