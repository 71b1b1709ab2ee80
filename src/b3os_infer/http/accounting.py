"""The seam between a generation and the edge's limits and usage ledger.

The edge puts an ``Accounting`` object in the ASGI scope state under ``ACCOUNTING_KEY``.
Routes ask it to admit a request once its input tokens are counted (it may raise
``RateLimited`` or ``Overloaded``), and settle it exactly once with the usage it really
had: on completion, on error, or when the client went away. Without an edge (in-process
tests of the node) nothing is accounted.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from starlette.requests import Request

from ..core import ChatEvent, Finished, Usage

ACCOUNTING_KEY = "b3os.accounting"


class Accounting(Protocol):
    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None: ...

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        """``usage`` is None when the request failed or was abandoned before finishing."""
        ...


class Admission:
    """One admitted request; ``settle`` is idempotent."""

    def __init__(self, accounting: Accounting | None, model_id: str) -> None:
        self._accounting = accounting
        self._model_id = model_id
        self._settled = False

    async def settle(self, usage: Usage | None) -> None:
        if self._settled or self._accounting is None:
            return
        self._settled = True
        await self._accounting.settle(self._model_id, usage)

    async def watch(self, events: AsyncGenerator[ChatEvent, None]
                    ) -> AsyncGenerator[ChatEvent, None]:
        """Pass a stream through, settling with its final usage, or None if it broke off."""
        usage: Usage | None = None
        try:
            async for event in events:
                if isinstance(event, Finished):
                    usage = event.usage
                yield event
        finally:
            await events.aclose()
            await self.settle(usage)


async def admit(request: Request, model_id: str, input_tokens: int,
                max_tokens: int) -> Admission:
    accounting: Accounting | None = request.scope.get("state", {}).get(ACCOUNTING_KEY)
    if accounting is not None:
        await accounting.admit(model_id, input_tokens, max_tokens)
    return Admission(accounting, model_id)
