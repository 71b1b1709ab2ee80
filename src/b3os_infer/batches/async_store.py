"""The batch store as the routes and the runner see it: every call on the edge's database
threads (``edge/storage/db_threads.py``, the pool that key lookups and ledger rows use), never on
the event loop, so a slow database never stalls the streams the process serves.

A call that the database does not answer within the threads' bound (or a database that
cannot be reached) is refused as overloaded (529 on Anthropic routes, 503 on OpenAI
routes, ``batches_unavailable``, ``retry-after: 1``); the runner logs it and tries again
on its next turn. Each write is one transaction, and those the runner repeats are written
once (``BatchDatabase.finish``, ``end``), so a call that outlives its wait does no harm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from ..edge.storage.db_threads import DatabaseThreads
from ..errors import Overloaded
from .store import Answer, BatchDatabase, BatchRow, FileRow, Finisher, ItemRow

P = ParamSpec("P")
T = TypeVar("T")


def batches_unavailable() -> Overloaded:
    return Overloaded("the batch database is unavailable right now; retry shortly",
                      code="batches_unavailable", retry_after=1)


class BatchStore:
    def __init__(self, engine: Engine, threads: DatabaseThreads) -> None:
        self.database = BatchDatabase(engine)
        self.threads = threads

    async def _run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await self.threads.run(call, *args, **kwargs)
        except (TimeoutError, OperationalError) as exc:
            raise batches_unavailable() from exc

    # ---- files ---------------------------------------------------------------------

    async def add_file(self, row: FileRow, content: bytes) -> None:
        await self._run(self.database.add_file, row, content)

    async def file(self, key_id: str, file_id: str) -> FileRow | None:
        return await self._run(self.database.file, key_id, file_id)

    async def file_content(self, key_id: str, file_id: str) -> bytes | None:
        return await self._run(self.database.file_content, key_id, file_id)

    async def files(self, key_id: str, purpose: str | None = None) -> list[FileRow]:
        return await self._run(self.database.files, key_id, purpose)

    async def delete_file(self, key_id: str, file_id: str) -> bool:
        return await self._run(self.database.delete_file, key_id, file_id)

    # ---- batches -------------------------------------------------------------------

    async def add_batch(self, row: BatchRow, requests: Iterable[ItemRow]) -> None:
        await self._run(self.database.add_batch, row, list(requests))

    async def batch(self, key_id: str, batch_id: str) -> BatchRow | None:
        return await self._run(self.database.batch, key_id, batch_id)

    async def batch_by_id(self, batch_id: str) -> BatchRow | None:
        return await self._run(self.database.batch_by_id, batch_id)

    async def batches(self, key_id: str, api: str) -> list[BatchRow]:
        return await self._run(self.database.batches, key_id, api)

    async def delete_batch(self, batch_id: str) -> None:
        await self._run(self.database.delete_batch, batch_id)

    async def counts(self, batch_id: str) -> dict[str, int]:
        return await self._run(self.database.counts, batch_id)

    async def usage(self, batch_id: str) -> tuple[int, int, int]:
        return await self._run(self.database.usage, batch_id)

    async def items(self, batch_id: str) -> list[ItemRow]:
        return await self._run(self.database.items, batch_id)

    async def request_cancel(self, batch_id: str, now: float) -> None:
        await self._run(self.database.request_cancel, batch_id, now)

    # ---- what the runner reads and writes --------------------------------------------

    async def pending(self, limit: int, skip: set[tuple[str, int]]) -> list[ItemRow]:
        return await self._run(self.database.pending, limit, set(skip))

    async def finish(self, batch_id: str, idx: int, answer: Answer, now: float) -> None:
        await self._run(self.database.finish, batch_id, idx, answer, now)

    async def any_active(self) -> bool:
        return await self._run(self.database.any_active)

    async def stopping(self, now: float) -> list[BatchRow]:
        return await self._run(self.database.stopping, now)

    async def stop(self, batch: BatchRow, now: float) -> None:
        await self._run(self.database.stop, batch, now)

    async def unfinished(self) -> list[BatchRow]:
        return await self._run(self.database.unfinished)

    async def end(self, batch: BatchRow, outcome: str, now: float,
                  finisher: Finisher | None = None) -> BatchRow:
        """The batch ended, its API's output files (``finisher``) read and written on the
        same database thread."""
        return await self._run(self.database.end_with, batch, outcome, now, finisher)
