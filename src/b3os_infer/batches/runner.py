"""The batch runner: one task that runs pending batch requests in spare capacity.

When something changed (a batch submitted or canceled, a request done or preempted), and
once a second while a batch is in progress, it ends what has to end (canceled batches,
batches past ``expires_at``, batches with every request done) and reads the next pending
requests, oldest batch first.
Every ``check_seconds`` while batch work waits or runs, in memory only, it preempts a
batch request when an interactive one waits (the ``Gate``) and starts pending requests
while fewer than ``concurrency`` run and the gate lets them. A request's answer is
written when it is done; a request cut short (preempted, or the process stopped) stays
pending and runs again from its start. On start nothing else is needed to resume: what
is pending is run. Every read and write goes through ``BatchStore``, on the edge's
database threads: a slow database slows the runner's turns, never the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from ..config import BatchSettings
from ..errors import Overloaded
from .async_store import BatchStore
from .execute import Executor
from .gate import Gate
from .store import BatchRow, Finisher, ItemRow

log = logging.getLogger(__name__)
_IDLE_SECONDS = 1.0


@dataclass
class Flight:
    item: ItemRow
    task: asyncio.Task[None]
    started: float = field(default_factory=time.monotonic)


class BatchRunner:
    def __init__(self, store: BatchStore, executor: Executor, gate: Gate,
                 settings: BatchSettings, finishers: dict[str, Finisher]) -> None:
        self.store = store
        self.executor = executor
        self.gate = gate
        self.settings = settings
        self.finishers = finishers
        self.preempted = 0   # batch requests given back to interactive ones, since start
        self._flights: dict[tuple[str, int], Flight] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._candidates: list[ItemRow] = []   # pending requests read at the last refresh
        self._active = False   # whether the last refresh saw a batch in progress

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._task = asyncio.create_task(self._loop(), name="batch-runner")

    def wake(self) -> None:
        self._wake.set()

    async def close(self) -> None:
        """Stop: the requests running now stay pending, to run after the next start."""
        self._closing = True
        self.wake()
        flights = [f.task for f in self._flights.values()]
        for task in flights:
            task.cancel()
        for task in [*flights, *([self._task] if self._task else [])]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None
        self._closing = False

    async def _loop(self) -> None:
        refresh_at = 0.0
        while not self._closing:
            try:
                if self._wake.is_set() or time.monotonic() >= refresh_at:
                    self._wake.clear()
                    await self._refresh()
                    refresh_at = time.monotonic() + _IDLE_SECONDS
                self._preempt()
                self._fill()
            except Exception:  # noqa: BLE001 - the runner outlives a bad turn (logged)
                log.exception("the batch runner's turn failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._pause()):
                    await self._wake.wait()

    def _pause(self) -> float | None:
        """How long to wait for a wake: the check period while batch work waits or runs,
        a second while batches are active (their expiry), else until woken."""
        if self._flights or self._candidates:
            return self.settings.check_seconds
        return _IDLE_SECONDS if self._active else None

    async def _refresh(self) -> None:
        """The database's part of a turn, when something changed (or once a second while
        a batch is active):
        stop and end batches, and read the next pending requests. Between refreshes a
        turn only looks at the engine and the queues, in memory."""
        if self._closing:
            return
        now = time.time()
        await self._stop_batches(now)
        await self._end_batches(now)
        room = max(self.settings.concurrency - len(self._flights), 0)
        self._candidates = await self.store.pending(room, set(self._flights)) if room else []
        self._active = await self.store.any_active()

    # ---- ending ----------------------------------------------------------------------

    async def _stop_batches(self, now: float) -> None:
        for batch in await self.store.stopping(now):
            flights = [f for f in self._flights.values() if f.item.batch_id == batch.id]
            for flight in flights:
                flight.task.cancel()
            for flight in flights:
                with contextlib.suppress(asyncio.CancelledError):
                    await flight.task
            await self.store.stop(batch, now)

    async def _end_batches(self, now: float) -> None:
        for batch in await self.store.unfinished():
            if any(key[0] == batch.id for key in self._flights):
                continue
            outcome = await self._outcome(batch)
            await self.store.end(batch, outcome, now, self.finishers.get(batch.api))

    async def _outcome(self, batch: BatchRow) -> str:
        counts = await self.store.counts(batch.id)
        if counts.get("expired"):
            return "expired"
        if batch.state == "canceling":
            return "canceled"
        return "completed"

    # ---- preempting and starting -------------------------------------------------------

    def _running_for(self, model: str) -> list[Flight]:
        return [f for f in self._flights.values() if f.item.model == model]

    def _preempt(self) -> None:
        for model in {f.item.model for f in self._flights.values()}:
            flights = self._running_for(model)
            if flights and self.gate.contended(model, len(flights)):
                newest = max(flights, key=lambda f: f.started)
                self._flights.pop(newest.item.key)
                newest.task.cancel()
                self.preempted += 1
                self.wake()   # it is pending again

    def _fill(self) -> None:
        waiting: list[ItemRow] = []
        for item in self._candidates:
            if len(self._flights) >= self.settings.concurrency or item.key in self._flights \
                    or not self.gate.may_start(item.model, len(self._running_for(item.model))):
                waiting.append(item)
                continue
            task = asyncio.create_task(self._run(item), name=f"batch {item.batch_id}")
            self._flights[item.key] = Flight(item, task)
        self._candidates = waiting

    async def _run(self, item: ItemRow) -> None:
        try:
            batch = await self.store.batch_by_id(item.batch_id)
            if batch is None:
                return
            answer = await self.executor.run(batch, item)
            if self._mine(item):
                await self.store.finish(item.batch_id, item.idx, answer, time.time())
        except Overloaded as error:   # the database: the request stays pending, runs again
            log.warning("batch %s request %d: %s", item.batch_id, item.idx, error.message)
        finally:
            if self._mine(item):
                del self._flights[item.key]
            self.wake()

    def _mine(self, item: ItemRow) -> bool:
        """Whether this task still runs ``item`` (a preempted one no longer does)."""
        flight = self._flights.get(item.key)
        return flight is not None and flight.task is asyncio.current_task()
