"""The official TypeScript SDKs (@anthropic-ai/sdk, openai) against the live server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "js"
MODEL = "b3os/smollm2-135m-instruct"


def run_script(live, script: str) -> None:
    env = {**os.environ, "B3OS_BASE_URL": live.base_url, "B3OS_API_KEY": live.key,
           "B3OS_MODEL": MODEL}
    done = subprocess.run([str(JS / "node_modules" / ".bin" / "tsx"), script],
                          cwd=JS, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["ok"] is True


def test_streaming_tools_and_thinking_with_the_typescript_sdk(live):
    run_script(live, "anthropic_live.ts")


def test_streaming_tools_structured_output_and_legacy_with_the_openai_npm_package(live):
    run_script(live, "openai_live.ts")


def test_responses_create_stream_tools_and_stored_responses_with_the_openai_npm_package(live):
    run_script(live, "openai_responses_live.ts")
