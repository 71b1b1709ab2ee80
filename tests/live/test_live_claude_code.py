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
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.recorder import RecordingProxy
from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy

CLAUDE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / ".bin" / "claude"
MODEL = "b3os/smollm2-135m-instruct"


def claude(live, tmp_path: Path, *args: str, small: bool = True,
           env: dict[str, str | None] | None = None,
           program: Path = CLAUDE) -> subprocess.CompletedProcess[str]:
    """Claude Code with the two variables set; ``env`` adds or replaces variables (``None``
    removes one)."""
    base = {
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
    merged = {**base, **(env or {})}
    return subprocess.run([str(program), *args, *shortcut, "--model", MODEL],
                          env={k: v for k, v in merged.items() if v is not None},
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)


# Claude Code's own words when a reply stops at max_tokens (a small model may ramble that
# far); every other "API Error" means the server refused or broke something
LENGTH_STOP = "response exceeded the 256 output token maximum"
SERVER_FAILURE = re.compile(r"API Error(?!: Claude's response exceeded)|Unable to connect")


def test_claude_p_on_the_model_prints_a_reply_and_no_api_error(live, tmp_path):
    """What the 135M model writes is not judged (any text passes); what is: Claude Code's
    request is served (no API error, no refused connection), it exits 0 unless the reply
    reached the 256-token cap, and it prints the reply."""
    done = claude(live, tmp_path, "-p", "Name one river in Oregon.", "--tools", "Read")
    output = done.stdout + done.stderr
    assert not SERVER_FAILURE.search(output), output
    assert done.returncode == 0 or LENGTH_STOP in output, output
    assert done.stdout.strip(), done.stderr


# Sessions in which the model uses a tool, through a real server process serving the
# scripted engine: Claude Code with its default flags (its whole system prompt and every
# tool), the model calling a tool, Claude Code running it, the result coming back. Claude
# Code asks for thinking, so each scripted reply reasons first, as a reasoning model would.
# ``scripted_live(replies, context_window=...)``
ScriptedServer = Callable[..., LiveServer]


def reply(thought: str, then: str, when: str | None = None) -> dict[str, object]:
    text = f"<think>\n{thought}\n</think>\n\n{then}"
    return {"text": text, "when": {"last_user_contains": when}} if when else {"text": text}


def tool_call(name: str, arguments: dict[str, str]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture
def scripted_live(tmp_path: Path) -> Iterator[ScriptedServer]:
    processes = []

    def start(replies: list[dict[str, object]], context_window: int = 400_000
              ) -> LiveServer:
        home = tmp_path / "home"
        home.mkdir()
        # the engine reports the prefix each prompt shares with earlier ones as cached, as
        # a prefix cache that kept everything would: what Claude Code resends must be a
        # stable prefix for that to be most of each prompt
        script = {"template": "native", "context_window": context_window, "prefix_cache": True,
                  "replies": [*replies, {"text": "OK.", "repeat": True}]}
        (tmp_path / "script.json").write_text(json.dumps(script))
        (tmp_path / "b3os.toml").write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\n'
                                            'script = "script.json"\n')
        key = cli(home, "keys", "create", "--name", "cc").stdout.strip().splitlines()[-1]
        port = free_port()
        processes.append(start_server(home, port, "--config", str(tmp_path / "b3os.toml")))
        root = f"http://127.0.0.1:{port}"
        wait_healthy(root, processes[-1])
        return LiveServer(root=root, key=key, home=home)

    try:
        yield start
    finally:
        for process in processes:
            stop(process)


def events_of(server: LiveServer, tmp_path: Path, prompt: str, tool: str,
              program: Path = CLAUDE) -> list[dict[str, Any]]:
    """Claude Code's stream-json events for one ``-p`` session, which must succeed."""
    done = claude(server, tmp_path, "-p", prompt, "--output-format", "stream-json",
                  "--verbose", "--max-turns", "3", "--allowedTools", tool, small=False,
                  program=program)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and done.returncode == 0, done.stdout + done.stderr
    return events


def usages(events: list[dict[str, Any]]) -> list[dict[str, int]]:
    """The usage of each model reply of the session, in order (one reply may span several
    assistant events, one a content block, with the same message id)."""
    replies: dict[str, dict[str, int]] = {}
    for event in events:
        if event.get("type") == "assistant":
            replies.setdefault(event["message"]["id"], event["message"]["usage"])
    return list(replies.values())


def cached_share(usage: dict[str, int]) -> float:
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"] + \
        usage.get("cache_creation_input_tokens", 0)
    return usage["cache_read_input_tokens"] / prompt


def session(server: LiveServer, tmp_path: Path, prompt: str, tool: str, program: Path = CLAUDE
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Claude Code's events for one ``-p`` session: its tool calls, the results it sent
    back, and the final result; the session must succeed."""
    events = events_of(server, tmp_path, prompt, tool, program)
    blocks = [(event["type"], block) for event in events if event.get("type") in
              ("assistant", "user") for block in event["message"]["content"]
              if isinstance(block, dict)]
    thinking = [b for kind, b in blocks if kind == "assistant" and b["type"] == "thinking"]
    assert thinking and all(block["signature"] for block in thinking)
    calls = [b for kind, b in blocks if kind == "assistant" and b["type"] == "tool_use"]
    results = [b for kind, b in blocks if kind == "user" and b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert not any(r.get("is_error") for r in results), results
    result = events[-1]
    assert (result["type"], result["subtype"]) == ("result", "success"), result
    assert result["num_turns"] >= 2
    return calls, results, result


def password_file(scripted_live: ScriptedServer, tmp_path: Path
                  ) -> tuple[LiveServer, Path, str]:
    """A file with a fresh password in it, and a server whose model reads it and says it."""
    word = "w" + secrets.token_hex(6)
    notes = tmp_path / "notes.txt"
    notes.write_text(f"The password is {word}.\n")
    server = scripted_live([
        reply("The file will say.", tool_call("Read", {"file_path": str(notes)}),
              when="Read the file notes.txt"),
        reply("It holds the password.", f"The password is {word}.", when=word),
    ])
    return server, notes, word


def test_a_session_where_the_model_reads_a_file_answers_with_the_word_in_it(
        scripted_live, tmp_path, claude_cli):
    server, notes, word = password_file(scripted_live, tmp_path)
    calls, results, result = session(server, tmp_path, "Read the file notes.txt and tell me "
                                     "the password.", "Read", claude_cli.path)
    assert [(c["name"], c["input"]) for c in calls] == [("Read", {"file_path": str(notes)})]
    assert word in json.dumps(results[0]["content"])
    assert result["result"] == f"The password is {word}."


def test_b3os_infer_claude_runs_a_read_session_with_only_the_url_and_key_set(
        scripted_live, tmp_path, claude_cli):
    server, _, word = password_file(scripted_live, tmp_path)
    # no ANTHROPIC_* variable and no --model: the launcher finds them from the server
    env = {"PATH": f"{claude_cli.path.parent}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "B3OS_URL": server.root, "B3OS_API_KEY": server.key,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "b3os-infer"), "claude", "-p",
         "Read the file notes.txt and tell me the password.", "--output-format", "json",
         "--max-turns", "3", "--allowedTools", "Read"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert (result["subtype"], result["result"]) == ("success", f"The password is {word}.")
    assert result["num_turns"] >= 2


def test_a_session_where_the_model_writes_a_file_leaves_it_with_the_content(
        scripted_live, tmp_path, claude_cli):
    target = tmp_path / "hello.txt"
    content = "Hello from the scripted model.\n"
    server = scripted_live([
        reply("A new file is asked for.",
              tool_call("Write", {"file_path": str(target), "content": content}),
              when="Create the file hello.txt"),
        reply("It is written.", "Done: hello.txt is created.", when=str(target)),
    ])
    calls, _, result = session(server, tmp_path, "Create the file hello.txt saying hello.",
                               "Write", claude_cli.path)
    assert [c["name"] for c in calls] == ["Write"]
    assert target.read_text() == content
    assert result["result"] == "Done: hello.txt is created."


def test_a_sessions_second_request_and_a_second_session_are_served_from_the_cache(
        scripted_live, tmp_path, claude_cli):
    notes = tmp_path / "notes.txt"
    notes.write_text("The password is swordfish.\n")
    server = scripted_live([
        reply("The file will say.", tool_call("Read", {"file_path": str(notes)}),
              when="Read the file notes.txt"),
        reply("It holds the password.", "The password is swordfish.", when="swordfish"),
        reply("A greeting.", "Hello again.", when="Say hello"),
    ])
    first = usages(events_of(server, tmp_path, "Read the file notes.txt and tell me the "
                             "password.", "Read", claude_cli.path))
    assert len(first) >= 2, first
    # the tool result's turn resends the whole first prompt before its new messages
    assert cached_share(first[1]) >= 0.9, first
    # a new session in the same directory: the same system prompt and tools, another task
    second = usages(events_of(server, tmp_path, "Say hello.", "Read", claude_cli.path))
    assert cached_share(second[0]) >= 0.9, second


# At the window's edge. The scripted engine counts one byte as one token, so Claude Code's
# first request (its system prompt and tools) is about 77,000 tokens here, and eight files
# read one after the other carry a session past a window of 100,000.
WINDOW = 100_000
CONTINUED = "This session is being continued from a previous conversation"


def _parts(tmp_path: Path) -> list[Path]:
    parts = []
    for i in range(8):
        part = tmp_path / f"part{i}.txt"
        lines = [f"Line {n} of part {i}: the lanterns by the harbour are lit at dusk."
                 for n in range(80)]
        part.write_text("\n".join([f"marker-{i}", *lines]) + "\n")
        parts.append(part)
    return parts


def test_claude_code_compacts_the_session_at_the_window_and_goes_on(scripted_live, tmp_path,
                                                                    claude_cli):
    parts = _parts(tmp_path)
    read = [reply("Start with the first file.", tool_call("Read", {"file_path": str(parts[0])}),
                  when="Read the files part0.txt")]
    read += [reply(f"Part {i} is read; on to the next.",
                   tool_call("Read", {"file_path": str(parts[i + 1])}), when=f"marker-{i}")
             for i in range(7)]

    server = scripted_live([
        *read,
        # every compaction gets a summary (2.1.197 compacts twice in this session)
        {**reply("The conversation so far.", "<summary>\nThe user asked to read part0.txt to "
                 "part7.txt one after the other; the parts read so far describe lanterns by "
                 "the harbour.\n</summary>", when="summary"), "repeat": True},
        # 2.1.332 compacts before the last part is asked for (it keeps room for a reply) and
        # its next request ends with reminders, not a part: the model goes on from the summary
        {**reply("The summary says where to go on.",
                 tool_call("Read", {"file_path": str(parts[7])})),
         "when": {"prompt_contains": CONTINUED}},
        {**reply("Nothing more to do.", "OK."), "repeat": True},
    ], context_window=WINDOW)
    done = claude(server, tmp_path, "-p", "Read the files part0.txt to part7.txt one after "
                  "the other, then say what colour the lanterns are.", "--output-format",
                  "stream-json", "--verbose", "--max-turns", "12", "--allowedTools", "Read",
                  small=False, env={"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096",
                                    "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(WINDOW)},
                  program=claude_cli.path)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    trace = done.stdout[-20_000:] + done.stderr[-5_000:]
    system = [e for e in events if e.get("type") == "system"]
    assert any(e.get("subtype") == "status" and e.get("status") == "compacting"
               for e in system), trace
    assert any(e.get("compact_result") == "success" for e in system), trace
    boundaries = [i for i, e in enumerate(events) if e.get("subtype") == "compact_boundary"]
    assert boundaries, trace
    metadata = [events[i]["compact_metadata"] for i in boundaries]
    assert all(m["trigger"] == "auto" for m in metadata), metadata
    # near the edge of the window it was told, down to a summary and the last turns (2.1.197
    # compacted at about the window; 2.1.332 keeps room for a reply and ~13,000 tokens more:
    # 100,000 - 4,096 - 13,000 = 82,904, seen at 84,098)
    first = metadata[0]
    assert 0.8 * WINDOW <= first["pre_tokens"] <= 1.1 * WINDOW, metadata
    assert first["post_tokens"] < 0.2 * WINDOW, metadata
    after = events[boundaries[0] + 1:]
    texts = [block.get("text", "") if isinstance(block, dict) else block
             for e in after if e.get("type") == "user"
             for block in (e["message"]["content"] if isinstance(e["message"]["content"], list)
                           else [e["message"]["content"]])]
    assert any(text.startswith(CONTINUED) for text in texts), trace
    # and the session went on: the model called Read again after the boundary
    reads = [block["input"]["file_path"] for e in after if e.get("type") == "assistant"
             for block in e["message"]["content"]
             if block.get("type") == "tool_use" and block["name"] == "Read"]
    assert str(parts[-1]) in reads, trace
    # prompts read from the prefix cache go back to the input bucket, and the prompt over
    # the window took none: ~100,000-token requests never ran into input_tokens_per_minute
    retries = [e for e in system if e.get("subtype") == "api_retry"]
    assert not retries, retries
    assert (events[-1]["type"], events[-1]["subtype"]) == ("result", "success"), trace


def test_a_first_request_over_the_window_is_prompt_is_too_long_with_our_numbers(
        scripted_live, tmp_path, claude_cli):
    window = 16_384
    server = scripted_live([], context_window=window)
    done = claude(server, tmp_path, "-p", "Name one river in Oregon.", small=False,
                  env={"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096"}, program=claude_cli.path)
    output = done.stdout + done.stderr
    # our 400 says "prompt is too long: N tokens > 16383 maximum"; Claude Code reads both
    found = re.search(r"Prompt is too long \S+ the request is ~(\d+) tokens \(limit (\d+)\)",
                      output)
    assert found, output
    assert int(found[2]) == window - 1, output
    # Claude Code's whole first request (2.1.197: ~77,000; 2.1.332, which defers tools: ~49,000)
    assert int(found[1]) > 2 * window, output
    assert done.returncode != 0, output



def has_system_message(body: dict[str, Any] | None) -> bool:
    return any(m.get("role") == "system" for m in (body or {}).get("messages") or [])


def test_a_default_session_is_refused_only_for_the_system_message_it_then_folds(
        scripted_live, tmp_path, claude_cli):
    server = scripted_live([reply("A river is asked for.", "The Willamette.",
                                  when="Name one river")])
    # Claude Code's own defaults: no output cap (it asks for max_tokens 32000), every tool,
    # its whole system prompt, thinking as it sends it
    with RecordingProxy(server.root) as proxy:
        done = claude(LiveServer(proxy.root, server.key, server.home), tmp_path, "-p",
                      "Name one river in Oregon.", small=False,
                      env={"CLAUDE_CODE_MAX_OUTPUT_TOKENS": None}, program=claude_cli.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The Willamette." in done.stdout
    exchanges = proxy.recording.exchanges
    messages = [e for e in exchanges if e.path.startswith("/v1/infer/v1/messages")]
    assert messages and messages[-1].status == 200
    # it asked for more than the model can write (8,192 here), which was lowered, not refused
    assert messages[-1].body is not None and messages[-1].body["max_tokens"] > 8192
    for i, refused in enumerate(messages):
        if refused.status == 200:
            continue
        # the one refusal the seed asks for, worded as the real API does, then resent folded
        assert refused.status == 400 and has_system_message(refused.body), refused
        assert refused.answer is not None
        assert refused.answer["error"]["message"].startswith('Unexpected role "system"')
        assert not has_system_message(messages[i + 1].body)
    assert [e for e in exchanges if e.status >= 400 and e not in messages] == []
