"""The batch store reads and writes on the edge's database threads, never the event loop.

As the key lookups and ledger rows do (``tests/unit/test_key_gate.py``,
``tests/app/test_slow_database.py``): a SQLAlchemy hook notes the thread of every
statement while both APIs' batches are created, run by the runner, listed, read and
deleted; and a batch database that does not answer within the threads' bound is refused
as overloaded in each API's shape, instead of a hang.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from sqlalchemy import event

from b3os_infer.engine.scripted.script import Reply
from support.batch_app import BatchApp, batch_app, until

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello there.", repeat=True)
BATCH_TABLES = ("batch_files", "batches", "batch_items")


def _params(model: str) -> dict[str, object]:
    return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


class Threads:
    """Notes the thread of each statement; sleeps in those on the batch tables if told."""

    def __init__(self, app: BatchApp) -> None:
        self.seen: list[tuple[str, str]] = []   # thread name, statement
        self.sleep = 0.0
        event.listen(app.service.store.database.engine, "before_cursor_execute", self._note)

    def _note(self, _conn, _cursor, statement, *_args) -> None:
        self.seen.append((threading.current_thread().name, statement))
        if self.sleep and any(t in statement for t in BATCH_TABLES):
            time.sleep(self.sleep)

    def on_batch_tables(self) -> list[tuple[str, str]]:
        return [(name, s) for name, s in self.seen if any(t in s for t in BATCH_TABLES)]


async def _anthropic_batch(app: BatchApp) -> None:
    batches = app.anthropic.messages.batches
    made = await batches.create(requests=[{"custom_id": f"r{i}", "params": _params(app.model)}
                                          for i in range(2)])

    async def ended() -> bool:
        return (await batches.retrieve(made.id)).processing_status == "ended"
    await until(ended, "the Anthropic batch ended")
    assert [line.result.type async for line in await batches.results(made.id)] == \
        ["succeeded"] * 2
    assert [b.id async for b in batches.list()] == [made.id]
    await batches.delete(made.id)


async def _openai_batch(app: BatchApp) -> None:
    line = json.dumps({"custom_id": "c", "method": "POST", "url": "/v1/chat/completions",
                       "body": _params(app.model)})
    upload = await app.openai.files.create(file=("in.jsonl", line.encode()), purpose="batch")
    made = await app.openai.batches.create(input_file_id=upload.id,
                                           endpoint="/v1/chat/completions",
                                           completion_window="24h")

    async def ended() -> bool:
        return (await app.openai.batches.retrieve(made.id)).status == "completed"
    await until(ended, "the OpenAI batch completed")
    done = await app.openai.batches.retrieve(made.id)
    assert done.output_file_id is not None
    assert "Hello there." in (await app.openai.files.content(done.output_file_id)).text
    assert [f.id async for f in app.openai.files.list()][-1] == upload.id
    assert (await app.openai.files.delete(upload.id)).deleted


async def test_every_batch_statement_runs_on_a_database_thread(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        threads = Threads(app)
        await _anthropic_batch(app)
        await _openai_batch(app)
    batch_statements = threads.on_batch_tables()
    assert len(batch_statements) >= 20            # routes and the runner, both APIs
    assert any("api_keys" in s for _, s in threads.seen)   # the runner's key check
    on_loop = [(name, s) for name, s in threads.seen if not name.startswith("b3os-db")]
    assert on_loop == []


async def test_a_batch_database_that_does_not_answer_in_time_is_overloaded(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        threads = Threads(app)
        await app.anthropic.models.list()         # the key is cached: only batches wait
        app.edge.ledger.threads.timeout = 0.1
        threads.sleep = 0.5
        anthropic_side = await app.http.post(
            "/v1/messages/batches", headers={"x-api-key": app.mine.key},
            json={"requests": [{"custom_id": "a", "params": _params(app.model)}]})
        openai_side = await app.http.get(
            "/batches", headers={"authorization": f"Bearer {app.mine.key}"})
        threads.sleep = 0.0
        app.edge.ledger.threads.timeout = 5.0
        assert anthropic_side.status_code == 529
        assert anthropic_side.json()["error"]["type"] == "overloaded_error"
        assert anthropic_side.json()["b3os"]["code"] == "batches_unavailable"
        assert openai_side.status_code == 503
        assert openai_side.json()["error"]["code"] == "batches_unavailable"
        assert anthropic_side.headers["retry-after"] == openai_side.headers["retry-after"] \
            == "1"
        # the database answers again: so do the routes
        assert (await app.openai.batches.list()).data is not None
