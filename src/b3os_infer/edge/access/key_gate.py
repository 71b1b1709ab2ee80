"""The request path's way to the keys: cached, off the event loop, revocations in a second.

``verify`` answers from memory when it can: verified records (``RECORDS``, for
``RECORD_SECONDS``) and keys that did not verify (``UNKNOWN``, for ``UNKNOWN_SECONDS``),
both bounded. A miss is one SELECT on a database thread
(``edge/storage/db_threads.py``), never on the event loop; so is the write of a key's
``last_used_at``, once a minute, in the background.
The records are dropped whenever the keys' revision changes (``key_revision.py``): a key
revoked anywhere stops working on every edge within ``revision_seconds``. Expiry is
checked by the caller against the clock on every request, from the record.

When the database cannot answer in time the request is refused as overloaded (529 on
Anthropic routes, 503 on OpenAI routes, ``keys_unavailable``, ``retry-after: 1``): keys
fail closed, since a key revoked meanwhile must not work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable

from sqlalchemy.exc import SQLAlchemyError

from ...errors import Overloaded
from ..storage.db_threads import DatabaseThreads
from .key_cache import TtlCache
from .key_revision import RevisionWatch
from .keys import KeyRecord, KeyStore, key_digest, well_formed

log = logging.getLogger(__name__)

RECORDS = 10_000
RECORD_SECONDS = 60.0
UNKNOWN = 10_000
UNKNOWN_SECONDS = 30.0


def keys_unavailable() -> Overloaded:
    return Overloaded("the key database is unavailable right now; retry shortly",
                      code="keys_unavailable", retry_after=1)


class KeyGate:
    def __init__(self, keys: KeyStore, threads: DatabaseThreads,
                 revision_seconds: float = 1.0) -> None:
        self.keys = keys
        self.threads = threads
        self.records: TtlCache[KeyRecord] = TtlCache(RECORDS, RECORD_SECONDS)
        self.unknown: TtlCache[bool] = TtlCache(UNKNOWN, UNKNOWN_SECONDS)
        self.watch = RevisionWatch(self._read_revision, self._revision_changed,
                                   revision_seconds)
        self._generation = 0
        self._revoked_here = keys.revoked_here
        self._touches: set[asyncio.Task[None]] = set()

    async def verify(self, key: str) -> KeyRecord | None:
        """The key's record, if it is known and not revoked (expired ones included)."""
        if not well_formed(key):
            return None
        if self.keys.revoked_here != self._revoked_here:   # in this process: at once
            self._revoked_here = self.keys.revoked_here
            self._revision_changed()
        try:
            await self.watch.fresh()
            record = await self._record(key)
        except (SQLAlchemyError, TimeoutError) as exc:
            log.warning("the key database did not answer: %s", exc)
            raise keys_unavailable() from exc
        if record is not None:
            self._touch(record.id)
        return record

    async def _record(self, key: str) -> KeyRecord | None:
        digest = key_digest(key)
        if (record := self.records.get(digest)) is not None:
            return record
        if self.unknown.get(digest) is not None:
            return None
        generation = self._generation
        record = await self.threads.run(self.keys.lookup, key)
        if generation == self._generation:   # else it may predate a revocation
            if record is None:
                self.unknown.put(digest, True)
            else:
                self.records.put(digest, record)
        return record

    async def _read_revision(self) -> Hashable:
        return await self.threads.run(self.keys.revision)

    def _revision_changed(self) -> None:
        self._generation += 1
        self.records.clear()

    def _touch(self, key_id: str) -> None:
        if not self.keys.touch_due(key_id):
            return
        task = asyncio.create_task(self._write_touch(key_id))
        self._touches.add(task)
        task.add_done_callback(self._touches.discard)

    async def drain(self) -> None:
        """Waits for the writes of ``last_used_at`` under way."""
        await asyncio.gather(*self._touches)

    async def _write_touch(self, key_id: str) -> None:
        try:
            await self.threads.run(self.keys.touch, key_id)
        except (SQLAlchemyError, TimeoutError) as exc:
            log.warning("could not write the last use of key %s: %s", key_id, exc)
