"""The seam between a generation and the edge's limits and usage ledger.

The edge puts an ``Accounting`` object in the ASGI scope state under ``ACCOUNTING_KEY``.
Routes ask it to admit a request once its input tokens are counted (it may raise
``RateLimited`` or ``Overloaded``), and settle it exactly once with the usage it really
had: on completion, on error, or when the client went away. Without an edge (in-process
tests of the node) nothing is accounted.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from typing import Protocol, TypeVar

from starlette.requests import Request

from ..core import Finished, Usage
from ..observe.context import note_admission
from .shutdown import Shutdown, guarded, shutdown_of

ACCOUNTING_KEY = "b3os.accounting"


class Accounting(Protocol):
    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None: ...

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        """``usage`` is None when the request failed or was abandoned before finishing."""
        ...


T = TypeVar("T")


def _finished_usage(event: object) -> Usage | None:
    return event.usage if isinstance(event, Finished) else None


class Admission:
    """One admitted request; ``settle`` is idempotent."""

    def __init__(self, accounting: Accounting | None, model_id: str,
                 shutdown: Shutdown | None = None) -> None:
        self._accounting = accounting
        self._model_id = model_id
        self._settled = False
        self._shutdown = shutdown

    async def settle(self, usage: Usage | None) -> None:
        if self._settled or self._accounting is None:
            return
        self._settled = True
        await self._accounting.settle(self._model_id, usage)

    def watch(self, events: AsyncGenerator[T, None],
              usage_of: Callable[[T], Usage | None] = _finished_usage
              ) -> AsyncGenerator[T, None]:
        """Pass a stream through, settling with its final usage, or None if it broke off
        (the client went away, or the server's shutdown bound ended it).

        ``usage_of`` picks the usage out of the event that ends the stream."""
        return guarded(self._shutdown, self._settling(events, usage_of))

    async def _settling(self, events: AsyncGenerator[T, None],
                        usage_of: Callable[[T], Usage | None]) -> AsyncGenerator[T, None]:
        usage: Usage | None = None
        try:
            async for event in events:
                usage = usage_of(event) or usage
                yield event
        finally:
            await events.aclose()
            await self.settle(usage)


async def admit(request: Request, model_id: str, input_tokens: int,
                max_tokens: int) -> Admission:
    accounting: Accounting | None = request.scope.get("state", {}).get(ACCOUNTING_KEY)
    shutdown = shutdown_of(request.scope)
    began = time.perf_counter_ns()
    try:
        if accounting is not None:
            wait = accounting.admit(model_id, input_tokens, max_tokens)
            await (shutdown.interruptible(wait) if shutdown else wait)
    finally:
        note_admission(model_id, began, time.perf_counter_ns())
    return Admission(accounting, model_id, shutdown)
