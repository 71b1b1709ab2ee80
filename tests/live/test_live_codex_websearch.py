"""Codex CLI's `web_search` tool (declared in every request) against the real server with a
search backend: the model's search runs on the node through a SearXNG-compatible server on
loopback, comes back to Codex as a `web_search_call` item, and the turn's answer uses it.
Run with the pinned and the newest Codex, configured as the README says."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from test_live_codex import MODEL, readme_config

from support.scripted_server import ScriptedServer, scripted_server
from support.web_servers import searxng_server

RESULTS = [{"url": "https://example.org/b3os", "title": "B3OS Infer 2.0 released",
            "content": "The release adds server tools."}]
ASK = "Search the web for b3os infer news"
CALL = '<tool_call>\n{"name": "web_search", "arguments": {"query": "b3os infer news"}}\n' \
    '</tool_call>'
REPLIES: list[dict[str, Any]] = [
    {"text": "I will search.\n\n" + CALL, "when": {"last_user_contains": ASK}},
    {"text": "The news: B3OS Infer 2.0 adds server tools.",
     "when": {"last_user_contains": "The release adds server tools."}},
]


def _server(tmp_path: Path, searxng_url: str) -> ScriptedServer:
    server = scripted_server(tmp_path / "server", REPLIES,
                             toml=f'[web_search]\nbackend = "searxng"\nurl = "{searxng_url}"\n')
    config = server.config.read_text().replace('id = "b3os/scripted"', f'id = "{MODEL}"')
    server.config.write_text(config)
    script_path = tmp_path / "server" / "script.json"
    script = json.loads(script_path.read_text())
    script.update({"template": "native", "context_window": 400_000})
    script_path.write_text(json.dumps(script))
    return server.start()


def _codex(server: ScriptedServer, tmp_path: Path, program: Path
           ) -> tuple[str, list[dict[str, Any]]]:
    codex_home, work = tmp_path / "codex", tmp_path / "work"
    codex_home.mkdir()
    work.mkdir()
    config = readme_config().replace("http://127.0.0.1:8000/v1/infer", server.base_url)
    (codex_home / "config.toml").write_text(config)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(codex_home),
           "B3OS_API_KEY": server.new_key()}
    last = tmp_path / "last.txt"
    done = subprocess.run(
        [str(program), "exec", "--skip-git-repo-check", "--ephemeral", "--json",
         "--dangerously-bypass-approvals-and-sandbox", "-C", str(work), "-o", str(last), ASK],
        env=env, cwd=work, capture_output=True, text=True, timeout=300)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout + done.stderr
    return last.read_text().strip(), events


def test_codex_gets_the_search_the_node_ran_and_answers_from_it(tmp_path, codex_cli):
    with searxng_server(RESULTS) as searxng:
        server = _server(tmp_path, searxng.url)
        try:
            answer, events = _codex(server, tmp_path, codex_cli.path)
        finally:
            server.stop()
    assert [q["q"] for q in searxng.queries] == [["b3os infer news"]]
    searches = [e["item"] for e in events if e.get("type") == "item.completed"
                and e["item"].get("type") == "web_search"]
    assert [(s["query"], s["action"]["type"]) for s in searches] == [
        ("b3os infer news", "search")]
    # the answer came in the same turn, after the search's result
    assert answer == "The news: B3OS Infer 2.0 adds server tools."
    assert [e["type"] for e in events].count("turn.completed") == 1
