"""Claude Code against the server that `make serve` runs, with only the two variables set.

Claude Code's full first request is about 20,000 tokens here (its system prompt and two
dozen tools); on two CPU cores that prompt alone takes minutes. These tests keep its
request small with its own flags (`--tools`, `--system-prompt`); the protocol is the same.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

CLAUDE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / ".bin" / "claude"
MODEL = "b3os/smollm2-135m-instruct"


def claude(live, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ANTHROPIC_BASE_URL": live.base_url,
        "ANTHROPIC_AUTH_TOKEN": live.key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        # a 135M model writes until its budget: keep each turn short
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "256",
    }
    small = ["--system-prompt", "You are a helpful assistant. Answer briefly."]
    return subprocess.run([str(CLAUDE), *args, *small, "--model", MODEL], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)


# Claude Code's own words when a reply stops at max_tokens (a small model may ramble that
# far); every other "API Error" means the server refused or broke something
LENGTH_STOP = "response exceeded the 256 output token maximum"
SERVER_FAILURE = re.compile(r"API Error(?!: Claude's response exceeded)|Unable to connect")


def test_claude_p_answers(live, tmp_path):
    done = claude(live, tmp_path, "-p", "Name one river in Oregon.", "--tools", "Read")
    output = done.stdout + done.stderr
    assert not SERVER_FAILURE.search(output), output
    assert done.returncode == 0 or LENGTH_STOP in output, output
    assert done.stdout.strip(), done.stderr


def test_a_session_with_tools_runs_to_its_end(live, tmp_path):
    (tmp_path / "notes.txt").write_text("The river is the Willamette.\n")
    done = claude(live, tmp_path, "-p", "Read the file notes.txt and tell me the river.",
                  "--output-format", "stream-json", "--verbose", "--max-turns", "3",
                  "--tools", "Read", "--allowedTools", "Read")
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events, done.stdout + done.stderr
    result = events[-1]
    assert result["type"] == "result", result
    errors = [e for e in events if SERVER_FAILURE.search(json.dumps(e))]
    assert not errors, errors[0].get("message", {}).get("content", errors[0])
    assert result["subtype"] in ("success", "error_max_turns"), result
    tools = [block["name"] for event in events if event.get("type") == "assistant"
             for block in event["message"]["content"] if block["type"] == "tool_use"]
    # the model chooses; when it used a tool, Claude Code ran it and we took the result back
    if tools:
        assert result["num_turns"] >= 2
