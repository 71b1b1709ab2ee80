"""The ledger's request path: rows appended in place to a SQLite file, or, when the file
is busy or not a file, through SQLAlchemy in a worker thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

from sqlalchemy import create_engine

from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.storage.db import open_database, usage
from b3os_infer.edge.storage.sqlite_append import SqliteAppender
from b3os_infer.edge.storage.usage import UsageLedger, UsageRow


def _row(request_id: str) -> UsageRow:
    return UsageRow(request_id, "k1", "m", "POST /chat/completions", 200, 12, 3, 4, 1.5)


def test_committed_rows_are_read_back_whole(tmp_path):
    ledger = UsageLedger(KeyStore(tmp_path / "k.sqlite3").engine)
    asyncio.run(ledger.commit(_row("req_a")))
    ledger.record(_row("req_b"))
    assert ledger._fast_appender() is not None  # the in-place path was the one taken
    ledger.close()
    again = UsageLedger(open_database(f"sqlite:///{tmp_path / 'k.sqlite3'}"))
    assert again.rows() == [_row("req_a"), _row("req_b")]


def test_a_busy_file_falls_back_to_the_waiting_path(tmp_path):
    path = tmp_path / "k.sqlite3"
    ledger = UsageLedger(KeyStore(path).engine)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        asyncio.run(ledger.commit(_row("req_busy")))  # waits for the lock, then writes
    finally:
        release.join()
        holder.close()
    assert [r.request_id for r in ledger.rows()] == ["req_busy"]


def test_only_a_sqlite_file_is_appended_in_place(tmp_path):
    memory = create_engine("sqlite://")
    assert SqliteAppender.for_engine(memory, usage) is None
    uri = create_engine(f"sqlite:///file:{tmp_path / 'x.db'}?mode=rwc&uri=true")
    assert SqliteAppender.for_engine(uri, usage) is None
    assert SqliteAppender.for_engine(create_engine(f"sqlite:///{tmp_path / 'y.db'}"),
                                     usage) is not None
