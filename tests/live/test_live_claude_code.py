"""Claude Code against the server that `make serve` runs, with only the two variables set.

Claude Code's full first request is about 20,000 tokens here (its system prompt and two
dozen tools); on two CPU cores that prompt alone takes minutes. The test on the model
keeps its request small with Claude Code's own flags (`--tools`, `--system-prompt`); the
session with a tool runs with the default flags on a server serving the scripted engine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy

CLAUDE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / ".bin" / "claude"
MODEL = "b3os/smollm2-135m-instruct"


def claude(live, tmp_path: Path, *args: str, small: bool = True
           ) -> subprocess.CompletedProcess[str]:
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
    # the real model gets a short request (its flags); the scripted one Claude Code's own
    shortcut = ["--system-prompt", "You are a helpful assistant. Answer briefly."] \
        if small else []
    return subprocess.run([str(CLAUDE), *args, *shortcut, "--model", MODEL], env=env,
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


# A session in which the model uses a tool, through a real server process serving the
# scripted engine: Claude Code with its default flags (its whole system prompt and every
# tool), the model asking for Read, Claude Code running it, the result coming back.
RIVER = "The river is the Willamette."


@pytest.fixture
def scripted_live(tmp_path: Path) -> Iterator[LiveServer]:
    home = tmp_path / "home"
    home.mkdir()
    notes = tmp_path / "notes.txt"
    notes.write_text(RIVER + "\n")
    call = {"name": "Read", "arguments": {"file_path": str(notes)}}
    # Claude Code asks for thinking: each reply reasons first, as a reasoning model would
    script = {"template": "native", "context_window": 400_000, "replies": [
        {"text": f"<think>\nThe file will say.\n</think>\n\n<tool_call>\n{json.dumps(call)}"
                 "\n</tool_call>", "when": {"last_user_contains": "Read the file notes.txt"}},
        {"text": "<think>\nIt names the river.\n</think>\n\nThe file says: " + RIVER,
         "when": {"last_user_contains": "Willamette"}},
        {"text": "OK.", "repeat": True},
    ]}
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "b3os.toml").write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\n'
                                        'script = "script.json"\n')
    key = cli(home, "keys", "create", "--name", "cc").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port, "--config", str(tmp_path / "b3os.toml"))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield LiveServer(root=root, key=key, home=home)
    finally:
        stop(process)


def test_a_session_where_the_model_thinks_reads_a_file_and_answers_from_it(
        scripted_live, tmp_path):
    done = claude(scripted_live, tmp_path, "-p", "Read the file notes.txt and tell me the "
                  "river.", "--output-format", "stream-json", "--verbose", "--max-turns", "3",
                  "--allowedTools", "Read", small=False)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and done.returncode == 0, done.stdout + done.stderr
    calls = [block for event in events if event.get("type") == "assistant"
             for block in event["message"]["content"] if block["type"] == "tool_use"]
    assert [(c["name"], c["input"]) for c in calls] == \
        [("Read", {"file_path": str(tmp_path / "notes.txt")})]
    thinking = [block for event in events if event.get("type") == "assistant"
                for block in event["message"]["content"] if block["type"] == "thinking"]
    assert thinking and all(block["signature"] for block in thinking)
    results = [block for event in events if event.get("type") == "user"
               for block in event["message"]["content"]
               if isinstance(block, dict) and block.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [calls[0]["id"]]
    assert "Willamette" in json.dumps(results[0]["content"]) and not results[0].get("is_error")
    result = events[-1]
    assert (result["type"], result["subtype"]) == ("result", "success"), result
    assert result["result"] == "The file says: " + RIVER
    assert result["num_turns"] >= 2
