"""Batches, their requests and files in the edge database (SQLite or PostgreSQL).

Every change is one transaction, so a process killed at any moment leaves each request
either pending (it runs again) or done with its answer. Each ``BatchDatabase`` method
blocks on the database: the routes and the runner call it through ``BatchStore``
(``async_store.py``), on the edge's database threads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from sqlalchemy import Engine, and_, delete, func, select, update

from ..edge.storage.db import create_schema
from .tables import batches, files, items, metadata

ACTIVE = ("in_progress", "canceling")
DONE = ("succeeded", "errored", "canceled", "expired")


@dataclass(frozen=True)
class FileRow:
    id: str
    key_id: str
    purpose: str
    filename: str
    bytes: int
    created_at: float
    expires_at: float | None = None


@dataclass(frozen=True)
class BatchRow:
    id: str
    api: str
    key_id: str
    endpoint: str
    state: str
    created_at: float
    expires_at: float
    total: int
    outcome: str | None = None
    ended_at: float | None = None
    cancel_initiated_at: float | None = None
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemRow:
    batch_id: str
    idx: int
    custom_id: str
    model: str
    body: str
    state: str = "pending"
    status_code: int | None = None
    request_id: str | None = None
    answer: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    finished_at: float | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.batch_id, self.idx


@dataclass(frozen=True)
class Answer:
    """How one request ended: its state, and the route's response if it ran."""

    state: str
    status_code: int | None = None
    request_id: str | None = None
    answer: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


_BATCH_FIELDS = [f.name for f in fields(BatchRow)]
_ITEM_FIELDS = [f.name for f in fields(ItemRow)]
_FILE_FIELDS = [f.name for f in fields(FileRow)]


def _batch(row: Sequence[Any]) -> BatchRow:
    values = dict(zip(_BATCH_FIELDS, row, strict=True))
    values["extra"] = json.loads(values["extra"] or "{}")
    return BatchRow(**values)


class BatchDatabase:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_schema(metadata, engine)

    # ---- files ---------------------------------------------------------------------

    def add_file(self, row: FileRow, content: bytes) -> None:
        with self.engine.begin() as db:
            db.execute(files.insert().values(**_values(row, _FILE_FIELDS), content=content))

    def file(self, key_id: str, file_id: str) -> FileRow | None:
        query = select(*(files.c[n] for n in _FILE_FIELDS)).where(
            files.c.id == file_id, files.c.key_id == key_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return FileRow(*row) if row else None

    def file_content(self, key_id: str, file_id: str) -> bytes | None:
        query = select(files.c.content).where(files.c.id == file_id, files.c.key_id == key_id)
        with self.engine.connect() as db:
            content = db.execute(query).scalar_one_or_none()
        return bytes(content) if content is not None else None

    def files(self, key_id: str, purpose: str | None = None) -> list[FileRow]:
        query = select(*(files.c[n] for n in _FILE_FIELDS)).where(files.c.key_id == key_id)
        if purpose is not None:
            query = query.where(files.c.purpose == purpose)
        with self.engine.connect() as db:
            rows = db.execute(query.order_by(files.c.created_at, files.c.id)).all()
        return [FileRow(*row) for row in rows]

    def delete_file(self, key_id: str, file_id: str) -> bool:
        with self.engine.begin() as db:
            gone = db.execute(delete(files).where(files.c.id == file_id,
                                                  files.c.key_id == key_id))
        return bool(gone.rowcount)

    # ---- batches -------------------------------------------------------------------

    def add_batch(self, row: BatchRow, requests: Iterable[ItemRow]) -> None:
        with self.engine.begin() as db:
            db.execute(batches.insert().values(**_batch_values(row)))
            rows = [_values(item, _ITEM_FIELDS) for item in requests]
            if rows:
                db.execute(items.insert(), rows)

    def batch(self, key_id: str, batch_id: str) -> BatchRow | None:
        query = select(*(batches.c[n] for n in _BATCH_FIELDS)).where(
            batches.c.id == batch_id, batches.c.key_id == key_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return _batch(row) if row else None

    def batch_by_id(self, batch_id: str) -> BatchRow | None:
        query = select(*(batches.c[n] for n in _BATCH_FIELDS)).where(batches.c.id == batch_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return _batch(row) if row else None

    def batches(self, key_id: str, api: str) -> list[BatchRow]:
        """The key's batches of one API, newest first."""
        query = (select(*(batches.c[n] for n in _BATCH_FIELDS))
                 .where(batches.c.key_id == key_id, batches.c.api == api)
                 .order_by(batches.c.created_at.desc(), batches.c.id.desc()))
        with self.engine.connect() as db:
            return [_batch(row) for row in db.execute(query).all()]

    def delete_batch(self, batch_id: str) -> None:
        with self.engine.begin() as db:
            db.execute(delete(items).where(items.c.batch_id == batch_id))
            db.execute(delete(batches).where(batches.c.id == batch_id))

    def counts(self, batch_id: str) -> dict[str, int]:
        """Requests by state."""
        query = (select(items.c.state, func.count()).where(items.c.batch_id == batch_id)
                 .group_by(items.c.state))
        with self.engine.connect() as db:
            return {state: int(n) for state, n in db.execute(query).all()}

    def usage(self, batch_id: str) -> tuple[int, int, int]:
        """Input, output and cached tokens of the batch's requests that ran."""
        query = select(func.sum(items.c.input_tokens), func.sum(items.c.output_tokens),
                       func.sum(items.c.cached_tokens)).where(items.c.batch_id == batch_id)
        with self.engine.connect() as db:
            row = db.execute(query).one()
        return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)

    def items(self, batch_id: str) -> list[ItemRow]:
        query = (select(*(items.c[n] for n in _ITEM_FIELDS))
                 .where(items.c.batch_id == batch_id).order_by(items.c.idx))
        with self.engine.connect() as db:
            return [ItemRow(*row) for row in db.execute(query).all()]

    def request_cancel(self, batch_id: str, now: float) -> None:
        with self.engine.begin() as db:
            db.execute(update(batches).where(batches.c.id == batch_id,
                                             batches.c.state == "in_progress")
                       .values(state="canceling", cancel_initiated_at=now))

    # ---- what the runner reads and writes --------------------------------------------

    def pending(self, limit: int, skip: set[tuple[str, int]]) -> list[ItemRow]:
        """Up to ``limit`` pending requests of batches in progress, oldest batch first,
        leaving out those in ``skip`` (running now)."""
        query = (select(*(items.c[n] for n in _ITEM_FIELDS))
                 .join(batches, batches.c.id == items.c.batch_id)
                 .where(items.c.state == "pending", batches.c.state == "in_progress")
                 .order_by(batches.c.created_at, batches.c.id, items.c.idx)
                 .limit(limit + len(skip)))
        with self.engine.connect() as db:
            rows = [ItemRow(*row) for row in db.execute(query).all()]
        return [row for row in rows if row.key not in skip][:limit]

    def finish(self, batch_id: str, idx: int, answer: Answer, now: float) -> None:
        """Write a request's answer, once: a request already done keeps its first."""
        with self.engine.begin() as db:
            db.execute(update(items).where(items.c.batch_id == batch_id, items.c.idx == idx,
                                           items.c.state == "pending")
                       .values(**_values(answer, [f.name for f in fields(Answer)]),
                               finished_at=now))

    def any_active(self) -> bool:
        query = select(batches.c.id).where(batches.c.state.in_(ACTIVE)).limit(1)
        with self.engine.connect() as db:
            return db.execute(query).first() is not None

    def stopping(self, now: float) -> list[BatchRow]:
        """Active batches that are being canceled or whose time is up."""
        query = select(*(batches.c[n] for n in _BATCH_FIELDS)).where(
            batches.c.state.in_(ACTIVE),
            (batches.c.state == "canceling") | (batches.c.expires_at <= now))
        with self.engine.connect() as db:
            return [_batch(row) for row in db.execute(query).all()]

    def stop(self, batch: BatchRow, now: float) -> None:
        """Its pending requests canceled (a cancel) or expired (its time is up)."""
        state = "canceled" if batch.state == "canceling" and now < batch.expires_at \
            else "expired"
        with self.engine.begin() as db:
            db.execute(update(items).where(items.c.batch_id == batch.id,
                                           items.c.state == "pending")
                       .values(state=state, finished_at=now))

    def unfinished(self) -> list[BatchRow]:
        """Active batches with no pending request left: ready to end."""
        waiting = select(items.c.batch_id).where(items.c.state == "pending").distinct()
        query = select(*(batches.c[n] for n in _BATCH_FIELDS)).where(
            and_(batches.c.state.in_(ACTIVE), batches.c.id.not_in(waiting)))
        with self.engine.connect() as db:
            return [_batch(row) for row in db.execute(query).all()]

    def end(self, batch: BatchRow, outcome: str, now: float,
            output_files: Sequence[tuple[FileRow, bytes] | None] = ()) -> BatchRow:
        """The batch ended, with its output files (OpenAI), in one transaction; once: a
        batch that already ended (an earlier call that outlived its wait) keeps its
        files."""
        ids = [pair[0].id if pair else None for pair in output_files] + [None, None]
        ended = replace(batch, state="ended", outcome=outcome, ended_at=now,
                        output_file_id=ids[0], error_file_id=ids[1])
        with self.engine.begin() as db:
            changed = db.execute(update(batches).where(batches.c.id == batch.id,
                                                       batches.c.state.in_(ACTIVE))
                                 .values(state="ended", outcome=outcome, ended_at=now,
                                         output_file_id=ended.output_file_id,
                                         error_file_id=ended.error_file_id))
            if not changed.rowcount:
                return ended
            for pair in output_files:
                if pair is not None:
                    db.execute(files.insert().values(**_values(pair[0], _FILE_FIELDS),
                                                     content=pair[1]))
        return ended

    def end_with(self, batch: BatchRow, outcome: str, now: float,
                 finisher: Finisher | None) -> BatchRow:
        """``end``, with the output files that the batch's API writes (``finisher``)."""
        return self.end(batch, outcome, now, finisher(self, batch, now) if finisher else [])


# what an API writes when one of its batches ends: its output files (OpenAI), if any
Finisher = Callable[[BatchDatabase, BatchRow, float], list[tuple[FileRow, bytes] | None]]


def _values(row: object, names: Sequence[str]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


def _batch_values(row: BatchRow) -> dict[str, Any]:
    values = _values(row, _BATCH_FIELDS)
    values["extra"] = json.dumps(row.extra)
    return values
