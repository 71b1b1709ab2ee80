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
        """``usage`` is what the request used: all of it when it finished, the part up to
        then when it was cut short after its prompt was counted, None when nothing ran."""
        ...


T = TypeVar("T")


def _finished_usage(event: object) -> Usage | None:
    return event.usage if isinstance(event, Finished) else None


def _counted(so_far: Callable[[], Usage] | None) -> Usage | None:
    """The usage of a reply cut short, if its prompt had been counted."""
    usage = so_far() if so_far is not None else None
    return usage if usage is not None and usage.prompt_tokens > 0 else None


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
              usage_of: Callable[[T], Usage | None] = _finished_usage,
              so_far: Callable[[], Usage] | None = None) -> AsyncGenerator[T, None]:
        """Pass a stream through, settling with its final usage. A stream that broke off
        (the client went away, or the server's shutdown bound ended it) settles with
        ``so_far()``, the usage it had by then, once its prompt was counted; else None.

        ``usage_of`` picks the usage out of the event that ends the stream."""
        return guarded(self._shutdown, self._settling(events, usage_of, so_far))

    async def _settling(self, events: AsyncGenerator[T, None],
                        usage_of: Callable[[T], Usage | None],
                        so_far: Callable[[], Usage] | None) -> AsyncGenerator[T, None]:
        usage: Usage | None = None
        try:
            async for event in events:
                usage = usage_of(event) or usage
                yield event
        finally:
            await events.aclose()
            await self.settle(usage or _counted(so_far))


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
