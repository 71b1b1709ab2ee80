"""SIGTERM on the real server process (scripted engine): it drains, then ends what still
runs with each API's error event, writes every row and exits; a second signal exits at
once (docs/reliability.md)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx

from support.reliability_server import ROUTES, ScriptedServer, scripted_server

GRACE_S = 6


def _stream(server: ScriptedServer, path: str, word: str, out: dict[str, str],
            started: threading.Event) -> None:
    body = ROUTES[path](word)
    try:
        with httpx.stream("POST", server.base_url + path, json=body, timeout=120,
                          headers={"x-api-key": server.key}) as response:
            text = ""
            for chunk in response.iter_text():
                text += chunk
                started.set()
            out[f"{path} {word}"] = text
    except httpx.HTTPError as exc:
        out[f"{path} {word}"] = f"transport error: {exc!r}"
        started.set()


def _start(server: ScriptedServer, jobs: list[tuple[str, str]]
           ) -> tuple[list[threading.Thread], dict[str, str]]:
    out: dict[str, str] = {}
    threads = []
    for path, word in jobs:
        started = threading.Event()
        thread = threading.Thread(target=_stream, args=(server, path, word, out, started))
        thread.start()
        assert started.wait(30), f"{path} sent nothing"
        threads.append(thread)
    return threads, out


def _exit_within(server: ScriptedServer, seconds: float) -> int:
    try:
        return int(server.process.wait(timeout=seconds))
    except Exception:
        server.process.kill()
        raise


def test_sigterm_drains_then_ends_streams_with_their_error_events_and_exits(tmp_path: Path):
    with scripted_server(tmp_path, server={"shutdown_grace_seconds": GRACE_S}) as server:
        jobs = [("/v1/messages", "SLOW"), ("/chat/completions", "SLOW"),
                ("/responses", "SLOW"), ("/v1/messages", "HELD")]   # HELD: 5 s in all
        threads, out = _start(server, jobs)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        refused = httpx.post(server.base_url + "/v1/messages", json=ROUTES["/v1/messages"](
            "hello", stream=False), headers={"x-api-key": server.key}, timeout=10)
        rc = _exit_within(server, GRACE_S + 15)
        for thread in threads:
            thread.join(10)
        rows = server.ledger()

    assert refused.status_code == 503 and refused.headers["connection"] == "close"
    error = refused.json()
    assert error["error"]["type"] == "api_error" and error["b3os"]["code"] == "shutting_down"
    assert rc == 0
    # the short stream finished normally within the bound
    assert out["/v1/messages HELD"].rstrip().endswith('data: {"type":"message_stop"}')
    # the long ones were ended with their API's error event
    anthropic = out["/v1/messages SLOW"]
    assert "event: error" in anthropic and '"code":"shutting_down"' in anthropic
    chat = out["/chat/completions SLOW"]
    assert '"error":{' in chat and '"code":"shutting_down"' in chat
    responses = out["/responses SLOW"]
    assert "event: response.failed" in responses
    # every stream has its row (the refused request never got past the door: none)
    assert sorted(status for _, status, _ in rows) == [200, 200, 200, 200]


def test_a_second_sigterm_stops_the_server_at_once(tmp_path: Path):
    with scripted_server(tmp_path, server={"shutdown_grace_seconds": 600}) as server:
        threads, out = _start(server, [("/chat/completions", "SLOW")])
        server.process.send_signal(signal.SIGTERM)
        time.sleep(1)
        assert server.process.poll() is None        # draining: the stream goes on
        server.process.send_signal(signal.SIGTERM)
        began = time.monotonic()
        rc = _exit_within(server, 30)
        stopped_after = time.monotonic() - began
        for thread in threads:
            thread.join(10)
    print(f"stopped {stopped_after:.2f} s after the second SIGTERM")
    assert rc == 0
    assert out["/chat/completions SLOW"].startswith("transport error")   # cut, not ended
