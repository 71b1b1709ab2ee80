"""The keys' cache in front of the database: bounded, off the event loop, revocations seen."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from b3os_infer.edge.access.key_cache import TtlCache
from b3os_infer.edge.access.key_gate import KeyGate
from b3os_infer.edge.access.key_revision import RevisionWatch
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.storage.db import open_database
from b3os_infer.edge.storage.db_threads import DatabaseThreads
from b3os_infer.edge.storage.usage import UsageLedger, UsageRow
from b3os_infer.errors import Overloaded


class Statements:
    """Counts the statements an engine runs, by the table they read or write."""

    def __init__(self, engine, sleep: float = 0.0) -> None:
        self.seen: list[str] = []
        self.sleep = sleep
        self.fail = False
        event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, _conn, _cursor, statement, *_args) -> None:
        self.seen.append(statement)
        if self.sleep:
            time.sleep(self.sleep)
        if self.fail:
            raise OperationalError(statement, None, ConnectionRefusedError("database down"))

    def count(self, words: str) -> int:
        return sum(words in s for s in self.seen)


LOOKUP = "api_keys.key_hash"   # only the lookup of one key selects the hash
REVISION = "count(api_keys.revoked_at)"


@pytest.fixture
def database(tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    threads = DatabaseThreads()
    yield engine, threads
    threads.close()
    engine.dispose()


def test_a_well_formed_unknown_key_reaches_the_database_once(database):
    engine, threads = database
    store = KeyStore(engine)
    _, key = store.create("real")
    unknown = key[:-4] + "zzzz"
    statements = Statements(engine)
    gate = KeyGate(store, threads)

    async def scenario():
        return [await gate.verify(unknown) for _ in range(200)]

    assert asyncio.run(scenario()) == [None] * 200
    assert statements.count(LOOKUP) == 1
    assert len(gate.unknown) == 1


def test_malformed_keys_never_reach_the_database(database):
    engine, threads = database
    statements = Statements(engine)
    gate = KeyGate(KeyStore(engine), threads)

    async def scenario():
        return [await gate.verify(f"sk-nothing-{i}") for i in range(50)]

    assert asyncio.run(scenario()) == [None] * 50
    assert statements.seen == []


def test_a_known_key_is_looked_up_once_then_answered_from_memory(database):
    engine, threads = database
    store = KeyStore(engine)
    record, key = store.create("real")
    statements = Statements(engine)
    gate = KeyGate(store, threads)

    async def scenario():
        records = [await gate.verify(key) for _ in range(100)]
        await gate.drain()
        return records

    assert {r.id for r in asyncio.run(scenario())} == {record.id}
    assert statements.count(LOOKUP) == 1
    assert statements.count(REVISION) == 1
    assert statements.count("UPDATE api_keys SET last_used_at") == 1


def test_the_cache_is_bounded_and_forgets_after_its_time_to_live():
    now = [0.0]
    cache: TtlCache[int] = TtlCache(size=3, ttl=10.0, clock=lambda: now[0])
    for i in range(5):
        cache.put(f"k{i}", i)
    assert len(cache) == 3 and cache.get("k0") is None and cache.get("k4") == 4
    cache.get("k2")            # used: k3 is now the least recently used
    cache.put("k5", 5)
    assert cache.get("k3") is None and cache.get("k2") == 2
    now[0] = 10.0
    assert cache.get("k2") is None and cache.get("k5") is None and len(cache) == 1


def test_a_revocation_by_another_process_is_seen_once_the_revision_is_an_interval_old(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    edge_db, cli_db = open_database(url), open_database(url)   # as two processes would
    threads = DatabaseThreads()
    edge, cli = KeyStore(edge_db), KeyStore(cli_db)
    record, key = cli.create("shared")
    gate = KeyGate(edge, threads, revision_seconds=0.3)

    async def scenario():
        before = await gate.verify(key)
        cli.revoke(key)
        await asyncio.sleep(0.3)
        return before, await gate.verify(key)

    try:
        before, after = asyncio.run(scenario())
    finally:
        threads.close()
        edge_db.dispose()
        cli_db.dispose()
    assert before is not None and before.id == record.id
    assert after is None


def test_a_revocation_in_this_process_is_effective_on_the_next_request(database):
    engine, threads = database
    store = KeyStore(engine)
    _, key = store.create("here")
    gate = KeyGate(store, threads, revision_seconds=3600)

    async def scenario():
        before = await gate.verify(key)
        store.revoke(key)
        return before, await gate.verify(key)

    before, after = asyncio.run(scenario())
    assert before is not None and after is None


def test_concurrent_requests_share_one_read_of_the_revision():
    now = [100.0]
    reads, changes = [], []

    async def scenario():
        gate_open = asyncio.Event()

        async def read():
            reads.append(now[0])
            await gate_open.wait()
            return len(reads)

        watch = RevisionWatch(read, lambda: changes.append(now[0]), 1.0, lambda: now[0])
        waiting = [asyncio.create_task(watch.fresh()) for _ in range(50)]
        await asyncio.sleep(0)
        gate_open.set()
        await asyncio.gather(*waiting)
        now[0] += 0.4                    # fresh: nobody reads
        await asyncio.gather(*(watch.fresh() for _ in range(50)))
        now[0] += 0.3                    # half stale: one read in the background
        await asyncio.gather(*(watch.fresh() for _ in range(50)))
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert reads == [100.0, 100.7]
    assert changes == [100.7]            # the second read saw another revision


def test_a_database_that_does_not_answer_in_time_is_overloaded_not_a_hang(tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'slow.sqlite3'}")
    store = KeyStore(engine)
    _, key = store.create("slow")
    Statements(engine, sleep=0.5)
    threads = DatabaseThreads(timeout=0.1)
    gate = KeyGate(store, threads)
    try:
        with pytest.raises(Overloaded) as refused:
            asyncio.run(gate.verify(key))
    finally:
        threads.close()
        engine.dispose()
    assert refused.value.code == "keys_unavailable" and refused.value.retry_after == 1


def test_a_key_lookup_never_runs_on_the_event_loop_thread(database):
    engine, threads = database
    store = KeyStore(engine)
    _, key = store.create("where")
    where: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda *_: where.append(threading.current_thread().name))

    async def scenario():
        await gate.verify(key)
        await gate.verify(key[:-1] + "0")

    gate = KeyGate(store, threads)
    asyncio.run(scenario())
    assert where and all(name.startswith("b3os-db") for name in where)


def test_rows_the_database_refuses_wait_and_are_written_when_it_returns(tmp_path):
    # a URI filename: the in-place SQLite appender declines it, as it declines PostgreSQL
    engine = open_database(f"sqlite:///file:{tmp_path / 'ledger.sqlite3'}?mode=rwc&uri=true")
    ledger = UsageLedger(engine)
    statements = Statements(engine)

    def row(n: int) -> UsageRow:
        return UsageRow(f"req_{n}", "k", "m", "POST /v1/messages", 200, 1, 1, 0, 1.0)

    async def scenario():
        statements.fail = True
        await ledger.commit(row(1))
        await ledger.commit(row(2))
        kept = ledger.backlog
        statements.fail = False
        await ledger.commit(row(3))
        return kept

    try:
        kept = asyncio.run(scenario())
        written = [r.request_id for r in ledger.rows()]
    finally:
        ledger.close()
        engine.dispose()
    assert kept == 2 and ledger.backlog == 0
    assert written == ["req_1", "req_2", "req_3"]
