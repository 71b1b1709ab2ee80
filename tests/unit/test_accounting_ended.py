"""A fleet's admission that arrives after its forward ended gives its place back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from b3os_infer.core import Usage
from b3os_infer.edge.access.keys import KeyRecord, KeyStore
from b3os_infer.edge.admission.metering import EdgeAccounting
from b3os_infer.edge.admission.queue import QueueConfig, Queues
from b3os_infer.edge.middleware import EdgeRequest
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.errors import ClientDisconnected

MODEL = "b3os/fake"
KEY = KeyRecord(id="k", name="k", scopes=("infer",), created_at="", last_used_at=None,
                revoked_at=None)


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[EdgeState]:
    database = open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}")
    queues = Queues(QueueConfig(default={"running": 1, "waiting": 4}))
    state = EdgeState.for_keys(KeyStore(database), queues=queues)
    yield state
    state.ledger.close()
    database.dispose()


def test_a_place_granted_after_the_request_ended_is_given_back_at_once(edge):
    async def run() -> dict[str, dict[str, int]]:
        first, second = EdgeAccounting(edge, KEY), EdgeAccounting(edge, KEY)
        await first.admit(MODEL, 10, 10)
        waiting = asyncio.create_task(second.admit(MODEL, 10, 10))  # the long-poll
        await asyncio.sleep(0.01)
        await second.finish()            # its forward ended (the client went away)
        await first.settle(MODEL, Usage(10, 10, 0))   # the place it waited for comes free
        with pytest.raises(ClientDisconnected):
            await waiting
        return edge.queues.load()

    assert asyncio.run(run()) == {MODEL: {"running": 0, "waiting": 0}}


def test_a_reset_admission_can_be_admitted_again_and_settles_once(edge):
    async def run() -> dict[str, dict[str, int]]:
        accounting = EdgeAccounting(edge, KEY)
        await accounting.admit(MODEL, 10, 10)
        await accounting.reset()          # the node failed: try the next one
        assert edge.queues.load() == {MODEL: {"running": 0, "waiting": 0}}
        await accounting.admit(MODEL, 10, 10)
        await accounting.settle(MODEL, None)
        await accounting.finish()
        return edge.queues.load()

    assert asyncio.run(run()) == {MODEL: {"running": 0, "waiting": 0}}


def test_a_request_cancelled_while_its_end_waits_for_the_settle_still_writes_its_row(edge):
    """A client that closes as soon as it has the whole body cancels the request while the
    edge waits for the node's settle; the settle and the ledger row happen all the same."""
    scope = {"type": "http", "method": "POST", "path": "/v1/infer/v1/messages",
             "state": {"request_id": "req_cancelled"}}

    async def run() -> None:
        request = EdgeRequest(edge, scope, KEY)
        request.status = 200
        await request.accounting.admit(MODEL, 10, 10)
        ending = asyncio.create_task(request._end())   # waits for the node's settle
        await asyncio.sleep(0.01)
        ending.cancel()                                 # the client went away
        with pytest.raises(asyncio.CancelledError):
            await ending
        await request.accounting.settle(MODEL, Usage(10, 3, 0))   # the node settles
        await asyncio.gather(*edge.finishing)

    asyncio.run(run())
    rows = [r for r in edge.ledger.rows() if r.request_id == "req_cancelled"]
    assert [(r.status, r.input_tokens, r.output_tokens) for r in rows] == [(200, 10, 3)]
    assert edge.queues.load() == {MODEL: {"running": 0, "waiting": 0}}
