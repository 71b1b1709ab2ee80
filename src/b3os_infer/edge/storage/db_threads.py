"""The edge's database calls, off the event loop, on a few threads of their own.

A key lookup or a ledger write is a network round trip with PostgreSQL (and a lock wait
with a busy SQLite file). Run on the event loop it would stall every stream the process
serves; run on asyncio's default executor it would compete with everything else that uses
it. So they run here: a bounded pool (``workers`` threads, which is also as many
connections as the edge asks of its database at once) and a bound on each call's wait,
after which the caller answers the client that the database is unavailable.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_WORKERS = 4
DEFAULT_TIMEOUT_SECONDS = 5.0


class DatabaseThreads:
    def __init__(self, workers: int = DEFAULT_WORKERS,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.workers = workers
        self.timeout = timeout
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``call(*args)`` on a database thread; TimeoutError after ``timeout`` seconds
        (the call itself runs on to its end, as a thread cannot be interrupted)."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor(), functools.partial(call, *args, **kwargs))
        return await asyncio.wait_for(future, self.timeout)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="b3os-db")
        return self._pool

    def close(self) -> None:
        """Waits for the calls under way (a ledger row being written is not dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
