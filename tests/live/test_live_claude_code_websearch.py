"""Claude Code's WebSearch against the real server on the scripted engine: the model calls
WebSearch, Claude Code asks the server for a search with the `web_search_20250305` server
tool (a request of its own), the node runs it through a SearXNG-compatible server on
loopback and the model's turn goes on; Claude Code hands the links and the summary back
to the session, which answers from them. Run with the pinned and the newest Claude Code."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.scripted_server import MODEL, ScriptedServer, scripted_server
from support.web_servers import searxng_server

RESULTS = [{"url": "https://example.org/b3os", "title": "B3OS Infer 2.0 released",
            "content": "The release adds server tools."}]
ASK = "Search the web for b3os infer news"
# Claude Code's search request: its own system prompt and this user message
SEARCH_REQUEST = "Perform a web search for the query:"


def _call(name: str, arguments: dict[str, str]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


REPLIES: list[dict[str, Any]] = [
    # the session: reasoning (Claude Code asks for thinking), then the WebSearch call
    {"text": "<think>\nI should search.\n</think>\n\n" + _call(
        "WebSearch", {"query": "b3os infer news"}), "when": {"last_user_contains": ASK}},
    # Claude Code's search request (no thinking): the server tool's call, then, after the
    # results, what the model makes of them
    {"text": _call("web_search", {"query": "b3os infer news"}),
     "when": {"last_user_contains": SEARCH_REQUEST}},
    {"text": "B3OS Infer 2.0 adds server tools.",
     "when": {"last_user_contains": "<tool_response>", "prompt_contains": SEARCH_REQUEST}},
    # the session again, with WebSearch's result
    {"text": "<think>\nThe search found it.\n</think>\n\nThe news: B3OS Infer 2.0 adds "
     "server tools.", "when": {"last_user_contains": "B3OS Infer 2.0 released"}},
]


def _server(tmp_path: Path, searxng_url: str | None,
            replies: list[dict[str, Any]] = REPLIES) -> ScriptedServer:
    toml = f'[web_search]\nbackend = "searxng"\nurl = "{searxng_url}"\n' if searxng_url \
        else ""
    server = scripted_server(tmp_path / "server", replies, toml=toml)
    script_path = tmp_path / "server" / "script.json"
    script = json.loads(script_path.read_text())
    # Claude Code's first request is some 77,000 tokens of the scripted engine's bytes
    script.update({"template": "native", "context_window": 400_000})
    script_path.write_text(json.dumps(script))
    return server.start()


def _session(server: ScriptedServer, tmp_path: Path, program: Path) -> list[dict[str, Any]]:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_AUTH_TOKEN": server.new_key(),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1"}
    done = subprocess.run(
        [str(program), "-p", ASK, "--output-format", "stream-json", "--verbose",
         "--max-turns", "3", "--allowedTools", "WebSearch", "--model", MODEL],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and done.returncode == 0, done.stdout + done.stderr
    return events


def test_claude_codes_websearch_runs_on_the_node_and_the_session_answers_from_it(
        tmp_path, claude_cli):
    with searxng_server(RESULTS) as searxng:
        server = _server(tmp_path, searxng.url)
        try:
            events = _session(server, tmp_path, claude_cli.path)
        finally:
            server.stop()
    assert [q["q"] for q in searxng.queries] == [["b3os infer news"]]
    searched = [e["tool_use_result"] for e in events
                if e.get("type") == "user" and isinstance(e.get("tool_use_result"), dict)]
    assert len(searched) == 1
    found = json.dumps(searched[0])
    assert "https://example.org/b3os" in found and "B3OS Infer 2.0 released" in found
    assert "B3OS Infer 2.0 adds server tools." in found   # the model's turn went on
    assert searched[0]["searchCount"] == 1
    result = events[-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success",
                                                                      False), result
    assert result["result"] == "The news: B3OS Infer 2.0 adds server tools."


UNAVAILABLE = [
    *REPLIES[:2],
    {"text": "The search is unavailable.",
     "when": {"last_user_contains": "<tool_response>", "prompt_contains": SEARCH_REQUEST}},
    {"text": "<think>\nNo search here.\n</think>\n\nI could not search the web.",
     "when": {"last_user_contains": "Web search error: unavailable"}},
]


def test_without_a_backend_websearch_reports_unavailable_and_the_session_goes_on(
        tmp_path, claude_cli):
    server = _server(tmp_path, None, UNAVAILABLE)
    try:
        events = _session(server, tmp_path, claude_cli.path)
    finally:
        server.stop()
    searched = [e["tool_use_result"] for e in events
                if e.get("type") == "user" and isinstance(e.get("tool_use_result"), dict)]
    assert len(searched) == 1
    assert searched[0]["results"] == ["Web search error: unavailable",
                                      "The search is unavailable."]
    result = events[-1]
    assert (result["subtype"], result["is_error"]) == ("success", False), result
    assert result["result"] == "I could not search the web."
