"""The keys' revision as the request path knows it: never older than ``interval``.

Every edge that shares a key database learns of a revocation made anywhere (the CLI,
another edge) by reading one cheap value, the keys' revision (``KeyStore.revision``),
at most once per interval, not by looking each key up on each request. A request finds
the value fresh (nothing to do), half stale (a read starts in the background; the request
goes on), or stale (the request waits for that read): so a request that begins
``interval`` seconds after a revocation was committed always sees it, while under steady
traffic nobody waits. Concurrent requests share one read.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Hashable

log = logging.getLogger(__name__)


class RevisionWatch:
    def __init__(self, read: Callable[[], Awaitable[Hashable]], on_change: Callable[[], None],
                 interval: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._read = read
        self._on_change = on_change
        self._clock = clock
        self._seen: Hashable | None = None
        self._checked = -math.inf   # when the last successful read began
        self._reading: asyncio.Task[None] | None = None

    async def fresh(self) -> None:
        """Returns once the revision in hand is younger than ``interval`` (and the caches
        were emptied if it changed); raises what the read raised when it failed."""
        age = self._clock() - self._checked
        if age < self.interval / 2:
            return
        reading = self._reading or self._start()
        if age < self.interval:
            return
        await asyncio.shield(reading)

    def _start(self) -> asyncio.Task[None]:
        self._reading = asyncio.create_task(self._refresh())
        self._reading.add_done_callback(self._done)
        return self._reading

    async def _refresh(self) -> None:
        began = self._clock()
        value = await self._read()
        if self._seen is not None and value != self._seen:
            self._on_change()
        self._seen = value
        self._checked = began

    def _done(self, task: asyncio.Task[None]) -> None:
        self._reading = None
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("could not read the keys' revision: %s", error)
