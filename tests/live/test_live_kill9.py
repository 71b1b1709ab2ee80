"""kill -9 under load, then a restart on the same home: nothing that completed is lost.

A real server (scripted engine, SQLite under its home) serves streams and plain requests
from a dozen clients; it is killed with SIGKILL mid-stream. Every response a client saw
complete has its usage row (the row is committed before the response's last byte), the
database passes SQLite's integrity check, and after a restart the same key still works.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

import httpx

from support.scripted_server import MODEL, ScriptedServer, scripted_server

CLIENTS = 12
COMPLETED_BEFORE_KILL = 40
REPLY = {"tokens": [f" w{i}" for i in range(30)], "delay_s": 0.02, "repeat": True,
         "when": {"last_user_contains": "stream"}}


async def _client(server: ScriptedServer, key: str, n: int, completed: list[str],
                  cut: list[str], stop: asyncio.Event) -> None:
    anthropic = n % 2 == 0
    path = "/v1/messages" if anthropic else "/chat/completions"
    body = {"model": MODEL, "max_tokens": 64, "stream": n % 3 != 0,
            "messages": [{"role": "user", "content": "stream please"}]}
    end = "event: message_stop" if anthropic else "data: [DONE]"
    headers = {"x-api-key": key, "authorization": f"Bearer {key}",
               "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        while not stop.is_set():
            rid = None
            try:
                async with http.stream("POST", path, json=body, headers=headers) as response:
                    rid = response.headers["request-id"]
                    text = "".join([chunk async for chunk in response.aiter_text()])
                assert response.status_code == 200, text
                if body["stream"] and end not in text:
                    raise AssertionError(f"a stream without its end: {text[-200:]}")
                completed.append(rid)
            except httpx.HTTPError:
                if rid is not None:
                    cut.append(rid)
                return


async def _load_then_kill(server: ScriptedServer, key: str) -> tuple[list[str], list[str]]:
    completed: list[str] = []
    cut: list[str] = []
    stop = asyncio.Event()
    clients = [asyncio.create_task(_client(server, key, n, completed, cut, stop))
               for n in range(CLIENTS)]
    while len(completed) < COMPLETED_BEFORE_KILL:
        await asyncio.sleep(0.05)
    assert server.process is not None
    server.process.send_signal(signal.SIGKILL)
    stop.set()
    await asyncio.gather(*clients)
    server.process.wait()
    server.process = None
    return completed, cut


def test_after_kill_9_every_completed_response_has_its_row_and_the_database_is_sound(
        tmp_path: Path):
    server = scripted_server(tmp_path, [REPLY])
    key = server.new_key("kill9")
    server.start()
    try:
        completed, cut = asyncio.run(_load_then_kill(server, key))
        database = sqlite3.connect(server.home / "b3os.sqlite3")
        try:
            integrity = database.execute("PRAGMA integrity_check").fetchall()
            rows = {r for (r,) in database.execute("SELECT request_id FROM usage")}
        finally:
            database.close()
        server.start()
        after = httpx.post(server.base_url + "/v1/messages", timeout=30,
                           headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
                           json={"model": MODEL, "max_tokens": 8,
                                 "messages": [{"role": "user", "content": "hi"}]})
    finally:
        server.stop()
    assert integrity == [("ok",)]
    assert len(completed) >= COMPLETED_BEFORE_KILL and cut     # killed under load
    assert set(completed) <= rows
    assert after.status_code == 200, after.text
