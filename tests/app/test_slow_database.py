"""A slow key and ledger database does not stall a stream that is running.

Every statement the edge's database runs sleeps 0.3 s (a SQLAlchemy hook; PostgreSQL over a
slow link looks the same to the edge). While one stream is under way, other clients send
unknown keys (each a lookup) and complete requests (each a ledger row, written through
SQLAlchemy as on PostgreSQL). Proof without timing: the hook counts the stream's events
sent while each statement slept; were statements run on the event loop, that count would
be 0 for every one of them, since the loop could send nothing while blocked.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
import pytest
from sqlalchemy import event

from b3os_infer.app import create_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script, When
from b3os_infer.node.registry import ModelRegistry

pytestmark = pytest.mark.anyio

MODEL = "b3os/scripted"
TOKENS = 150
STATEMENT_SECONDS = 0.3
SCRIPT = Script(replies=(
    Reply(tokens=tuple(f" t{i}" for i in range(TOKENS)), delay_s=0.01,
          when=When(last_user_contains="long")),
    Reply("Short.", repeat=True),
))


class SlowStatements:
    """Sleeps in every statement; notes how many stream events went out meanwhile."""

    def __init__(self, events: list[float]) -> None:
        self.events = events
        self.overlaps: list[tuple[float, float, int]] = []   # began, ended, events sent
        self._lock = threading.Lock()

    def __call__(self, *_args: object) -> None:
        began, before = time.monotonic(), len(self.events)
        time.sleep(STATEMENT_SECONDS)
        with self._lock:
            self.overlaps.append((began, time.monotonic(), len(self.events) - before))


@pytest.fixture
async def slow_edge(tmp_path) -> AsyncIterator[tuple[object, str, SlowStatements, list[float]]]:
    async with AsyncExitStack() as stack:
        # a URI filename: the in-place SQLite appender declines it, so ledger rows go
        # through SQLAlchemy on the database threads, as they do with PostgreSQL
        database = open_database(f"sqlite:///file:{tmp_path / 'edge.sqlite3'}?mode=rwc&uri=true")
        stack.callback(database.dispose)
        keys = KeyStore(database)
        _, key = keys.create("slow-db")
        edge = EdgeState.for_keys(keys)
        stack.callback(edge.ledger.close)
        registry = ModelRegistry()
        registry.add(scripted_model(ModelBasics(id=MODEL),
                                    ScriptedEngine(SCRIPT), b"slow-db-secret"))
        await registry.start()
        stack.push_async_callback(registry.close)
        events: list[float] = []
        slow = SlowStatements(events)
        event.listen(database, "before_cursor_execute", slow)
        yield create_app(registry, keys, edge), key, slow, events


async def _stream(app, key: str, events: list[float]) -> int:
    """One streamed Messages request through the ASGI interface itself (the test
    transports buffer); each text delta's arrival is noted in ``events``."""
    body = json.dumps({"model": MODEL, "max_tokens": 400, "stream": True,
                       "messages": [{"role": "user", "content": "a long one"}]}).encode()
    headers = [(b"content-type", b"application/json"), (b"x-api-key", key.encode()),
               (b"anthropic-version", b"2023-06-01"),
               (b"content-length", str(len(body)).encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/infer/v1/messages",
             "raw_path": b"/v1/infer/v1/messages", "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 50000), "server": ("test", 80)}
    done = asyncio.Event()
    status = [0]
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if pending:
            return pending.pop()
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body":
            if b"text_delta" in message.get("body", b""):
                events.append(time.monotonic())
            if not message.get("more_body"):
                done.set()

    await app(scope, receive, send)
    return status[0]


async def test_slow_key_and_ledger_statements_do_not_stall_a_running_stream(slow_edge):
    app, key, slow, events = slow_edge
    stream = asyncio.create_task(_stream(app, key, events))
    while not events:                                 # the stream is under way
        await asyncio.sleep(0.01)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test/v1/infer") as http:
        unknown = [http.post("/v1/messages", headers={"x-api-key": key[:-6] + f"nope{i:02d}"},
                             json={"model": MODEL, "max_tokens": 5, "messages": []})
                   for i in range(8)]
        served = [http.post("/chat/completions", headers={"authorization": f"Bearer {key}"},
                            json={"model": MODEL, "messages": [{"role": "user",
                                                                "content": "hi"}]})
                  for _ in range(4)]
        answers = await asyncio.gather(*unknown, *served)
    status = await stream
    assert status == 200 and len(events) == TOKENS
    assert [a.status_code for a in answers] == [401] * 8 + [200] * 4
    during = [o for o in slow.overlaps if events[0] <= o[0] and o[1] <= events[-1]]
    assert len(during) >= 8                           # lookups and ledger rows, while streaming
    assert all(sent > 0 for _, _, sent in during)     # the stream went on through every one
