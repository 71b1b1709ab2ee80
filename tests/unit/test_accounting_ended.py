"""A fleet's admission that arrives after its forward ended gives its place back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from b3os_infer.core import Usage
from b3os_infer.edge.accounting import EdgeAccounting
from b3os_infer.edge.db import open_database
from b3os_infer.edge.keys import KeyRecord, KeyStore
from b3os_infer.edge.queue import QueueConfig, Queues
from b3os_infer.edge.state import EdgeState
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
