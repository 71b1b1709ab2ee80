"""Graceful shutdown, as the requests see it: draining, then the bound.

One ``Shutdown`` per server. While it drains, new requests are refused (a shaped 503,
``edge/shutdown_gate.py``) and running ones go on; when the bound is reached, ``end``
interrupts every wait a request is in (admission, an engine slot, the next token): the
generation is closed and the request fails with ``ShuttingDown``, which a stream's
encoder sends as its API's error event and a whole answer as a shaped 503.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable
from typing import TypeVar

from starlette.types import Scope

from ..errors import ShuttingDown

SHUTDOWN_KEY = "b3os.shutdown"

T = TypeVar("T")


def shutting_down() -> ShuttingDown:
    return ShuttingDown("the server is shutting down; retry the request", retry_after=1)


class Shutdown:
    def __init__(self) -> None:
        self.draining = False
        self.ended = False
        self.in_flight = 0   # requests, counted by the gate
        self._waiting: set[asyncio.Task[object]] = set()
        self._interrupted: set[asyncio.Task[object]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def drain(self) -> None:
        self.draining = True

    def end(self) -> None:
        """The bound: interrupt every request that waits for something."""
        self.draining = self.ended = True
        for task in list(self._waiting):
            self._interrupted.add(task)
            task.cancel()

    def absorb(self) -> bool:
        """Whether the current task's cancellation is ``end``'s (then it is taken back)."""
        task = asyncio.current_task()
        if task is None or task not in self._interrupted:
            return False
        self._interrupted.discard(task)
        task.uncancel()
        return True

    # ---- in-flight requests ------------------------------------------------------

    def entered(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def left(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def idle(self, within: float) -> bool:
        """Whether every request has ended within ``within`` seconds."""
        try:
            await asyncio.wait_for(self._idle.wait(), within)
        except TimeoutError:
            return False
        return True

    # ---- waits that the bound interrupts -------------------------------------------

    async def interruptible(self, work: Awaitable[T]) -> T:
        if self.ended:
            if (close := getattr(work, "close", None)) is not None:
                close()    # a coroutine that will never run
            raise shutting_down()
        task = asyncio.current_task()
        assert task is not None
        self._waiting.add(task)
        try:
            return await work
        except asyncio.CancelledError:
            if not self.absorb():
                raise
            raise shutting_down() from None
        finally:
            self._waiting.discard(task)


def shutdown_of(scope: Scope) -> Shutdown | None:
    found = scope.get("state", {}).get(SHUTDOWN_KEY)
    return found if isinstance(found, Shutdown) else None


async def guarded(shutdown: Shutdown | None, events: AsyncGenerator[T, None]
                  ) -> AsyncGenerator[T, None]:
    """``events`` until the shutdown's bound; then ``ShuttingDown`` from where it waits.

    Closed early (a reply folded at its final event), it closes ``events`` at once, so
    what they settle in their ``finally`` is settled before the caller goes on."""
    try:
        if shutdown is None:
            async for event in events:
                yield event
            return
        while True:
            try:
                event = await shutdown.interruptible(anext(events))
            except StopAsyncIteration:
                return
            yield event
    finally:
        await events.aclose()
