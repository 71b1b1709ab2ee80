"""The real server process (``b3os-infer serve``) on the scripted engine, for the
reliability tests: a config file, a script, a key, and what the process looks like from
outside (health, memory, the usage ledger)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from support.servers import cli, free_port, start_server, stop, wait_healthy

MODEL = "b3os/fake"

# One reply per kind of request, chosen by a word in the prompt.
REPLIES = [
    {"text": " ".join(["slow"] * 600), "delay_s": 0.1, "repeat": True,
     "when": {"prompt_contains": "SLOW"}},
    {"text": " ".join(["late"] * 100), "first_delay_s": 30, "delay_s": 0.1, "repeat": True,
     "when": {"prompt_contains": "PREFILL"}},
    {"text": " ".join(["storm"] * 40), "delay_s": 0.01, "repeat": True,
     "when": {"prompt_contains": "STORM"}},
    {"text": " ".join(["held"] * 50), "delay_s": 0.1, "repeat": True,
     "when": {"prompt_contains": "HELD"}},
    {"text": "Hello there, friend.", "repeat": True},
]


@dataclass
class ScriptedServer:
    root: str
    key: str
    home: Path
    process: Any

    @property
    def base_url(self) -> str:
        return self.root + "/v1/infer"

    @property
    def port(self) -> int:
        return int(self.root.rsplit(":", 1)[1])

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(self.root + "/healthz", timeout=10).json()
        return body

    def busy(self) -> dict[str, int]:
        """Sequences in the engine and places in the edge's queue still taken."""
        health = self.health()
        engine = health["models"][MODEL]
        queue = health.get("queues", {}).get(MODEL, {"running": 0, "waiting": 0})
        return {"active": engine["active"], "waiting": engine["waiting"],
                "queue_running": queue["running"], "queue_waiting": queue["waiting"]}

    def wait_idle(self, within: float = 15) -> dict[str, int]:
        """Polls until nothing is taken (or ``within`` s pass); returns the last state."""
        deadline = time.monotonic() + within
        while True:
            state = self.busy()
            if not any(state.values()) or time.monotonic() > deadline:
                return state
            time.sleep(0.1)

    def rss(self) -> int:
        return int(psutil.Process(self.process.pid).memory_info().rss)

    def ledger(self) -> list[tuple[str, int, int]]:
        """(request id, status, output tokens) of every usage row, oldest first."""
        with sqlite3.connect(self.home / "b3os.sqlite3") as db:
            return list(db.execute("SELECT request_id, status, output_tokens FROM usage "
                                   "ORDER BY id"))


def write_config(home: Path, **sections: dict[str, Any]) -> Path:
    (home / "replies.json").write_text(json.dumps({"template": "plain",
                                                   "context_window": 8192,
                                                   "replies": REPLIES}))
    tables = {"model": {"id": MODEL, "engine": "scripted", "script": "replies.json"},
              **sections}
    lines: list[str] = []
    for name, table in tables.items():
        _table(lines, name, table)
    path = home / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _table(lines: list[str], name: str, table: dict[str, Any]) -> None:
    """A TOML table; values that are tables become ``[name.key]`` tables."""
    lines.append(f"[{name}]")
    lines += [f"{k} = {json.dumps(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for key, value in table.items():
        if isinstance(value, dict):
            _table(lines, f"{name}.{key}", value)


@contextmanager
def scripted_server(home: Path, **sections: dict[str, Any]) -> Iterator[ScriptedServer]:
    config = write_config(home, **sections)
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port, "--config", str(config))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield ScriptedServer(root, key, home, process)
    finally:
        stop(process)


def anthropic_body(word: str, stream: bool = True) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1000, "stream": stream,
            "messages": [{"role": "user", "content": f"{word} please"}]}


def chat_body(word: str, stream: bool = True) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1000, "stream": stream,
            "messages": [{"role": "user", "content": f"{word} please"}]}


def responses_body(word: str, stream: bool = True) -> dict[str, Any]:
    return {"model": MODEL, "max_output_tokens": 1000, "stream": stream,
            "input": f"{word} please"}


def completions_body(word: str, stream: bool = True) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1000, "stream": stream,
            "prompt": f"{word} please"}


# path under /v1/infer -> body builder: the four routes that generate
ROUTES = {"/v1/messages": anthropic_body, "/chat/completions": chat_body,
          "/responses": responses_body, "/completions": completions_body}
