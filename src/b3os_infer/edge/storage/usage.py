"""The usage ledger: one row per request, committed when the request ends.

On the request path a row is appended in place to a SQLite file that is not busy (tens of
microseconds, ``sqlite_append.py``), else written on a database thread (``db_threads.py``),
never on the event loop. A row the database refused (PostgreSQL down, say) is kept in
memory, up to ``BACKLOG`` rows, and written with the next row that goes through.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Engine, case, func, select
from sqlalchemy.exc import SQLAlchemyError

from ..access.keys import utc_now
from .db import usage
from .db_threads import DatabaseThreads
from .sqlite_append import SqliteAppender


@dataclass(frozen=True)
class UsageRow:
    request_id: str
    key_id: str | None
    model: str
    route: str
    status: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency_ms: float


# a bucket's start is a prefix of ``created_at`` (UTC, ``YYYY-MM-DDTHH:MM:SSZ``) plus this
BUCKETS = {"minute": (16, ":00Z"), "hour": (13, ":00:00Z"), "day": (10, "T00:00:00Z")}


@dataclass(frozen=True)
class UsageTotal:
    key_id: str | None
    model: str
    requests: int
    errors: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class UsageBucket(UsageTotal):
    """The totals of one time bucket, which begins at ``start``."""

    start: str


log = logging.getLogger(__name__)

BACKLOG = 100_000


class UsageLedger:
    def __init__(self, engine: Engine, threads: DatabaseThreads | None = None) -> None:
        self.engine = engine
        self.threads = threads or DatabaseThreads()
        self._backlog: deque[dict[str, object]] = deque(maxlen=BACKLOG)
        self._appender: SqliteAppender | None = None
        self._appender_opened = False
        self._opening = threading.Lock()

    def record(self, row: UsageRow) -> None:
        """Write one row in its own transaction, so a later crash cannot lose it."""
        self._write(_values(row))

    async def commit(self, row: UsageRow) -> None:
        """``record`` for the request path: in place when the database is a SQLite file
        that is not busy (no thread, tens of microseconds), else on a database thread.
        Never raises for the database: a row it refuses waits in the backlog."""
        values = _values(row)
        appender = self._fast_appender()
        if appender is not None and not self._backlog and appender.append(values):
            return
        try:
            await self.threads.run(self._write_or_keep, values)
        except TimeoutError:
            log.warning("the usage row of %s is still being written", row.request_id)

    @property
    def backlog(self) -> int:
        """Rows the database refused, waiting for the next write that goes through."""
        return len(self._backlog)

    def close(self) -> None:
        if self._backlog:
            self._write_or_keep(None)
        if self._backlog:
            log.error("%d usage rows could not be written before the ledger closed",
                      len(self._backlog))
        self.threads.close()
        if self._appender is not None:
            self._appender.close()

    def _write(self, values: dict[str, object]) -> None:
        with self.engine.begin() as db:
            db.execute(usage.insert().values(**values))

    def _write_or_keep(self, values: dict[str, object] | None) -> None:
        """On a database thread: the backlog, then this row, each in its own transaction."""
        pending = []
        while self._backlog:   # other threads may drain it too
            try:
                pending.append(self._backlog.popleft())
            except IndexError:
                break
        if values is not None:
            pending.append(values)
        for done, row in enumerate(pending):
            try:
                self._write(row)
            except SQLAlchemyError as exc:
                log.warning("the ledger is unavailable, %d rows kept to write later: %s",
                            len(pending) - done, exc)
                self._backlog.extendleft(reversed(pending[done:]))
                return

    def _fast_appender(self) -> SqliteAppender | None:
        if not self._appender_opened:
            with self._opening:
                if not self._appender_opened:
                    self._appender = SqliteAppender.for_engine(self.engine, usage)
                    self._appender_opened = True
        return self._appender

    def rows(self) -> list[UsageRow]:
        columns = [usage.c[name] for name in UsageRow.__dataclass_fields__]
        with self.engine.connect() as db:
            return [UsageRow(*row) for row in db.execute(select(*columns)
                                                         .order_by(usage.c.id)).all()]

    def totals(self) -> list[UsageTotal]:
        query = (select(usage.c.key_id, usage.c.model, *_sums())
                 .group_by(usage.c.key_id, usage.c.model)
                 .order_by(usage.c.key_id, usage.c.model))
        with self.engine.connect() as db:
            return [UsageTotal(row[0], row[1], *_counts(row[2:]))
                    for row in db.execute(query).all()]

    def series(self, bucket: str, since: str) -> list[UsageBucket]:
        """Rows from ``since`` on, summed per time bucket, key and model, oldest first.

        The bucket is a prefix of the stored timestamp, so SQLite and PostgreSQL group
        alike, without date functions of their own (tests/live/test_edge_postgres.py)."""
        width, suffix = BUCKETS[bucket]
        start = func.substr(usage.c.created_at, 1, width).label("bucket_start")
        query = (select(start, usage.c.key_id, usage.c.model, *_sums())
                 .where(usage.c.created_at >= since)
                 .group_by(start, usage.c.key_id, usage.c.model)
                 .order_by(start, usage.c.key_id, usage.c.model))
        with self.engine.connect() as db:
            return [UsageBucket(row[1], row[2], *_counts(row[3:]),
                                start=row[0] + suffix)
                    for row in db.execute(query).all()]


def _sums() -> tuple[ColumnElement[int], ...]:
    """The columns of ``UsageTotal`` after its key and model: requests, errors, tokens."""
    return (func.count(), func.sum(case((usage.c.status >= 400, 1), else_=0)),
            func.sum(usage.c.input_tokens), func.sum(usage.c.output_tokens),
            func.sum(usage.c.cached_tokens))


def _counts(values: Sequence[Any]) -> tuple[int, int, int, int, int]:
    """The summed columns of a row, a sum over no rows (NULL) as 0."""
    requests, errors, input_tokens, output_tokens, cached = (int(v or 0) for v in values)
    return requests, errors, input_tokens, output_tokens, cached


def _values(row: UsageRow) -> dict[str, object]:
    values = {name: getattr(row, name) for name in _FIELDS}
    values["created_at"] = utc_now()
    return values


_FIELDS = tuple(UsageRow.__dataclass_fields__)
