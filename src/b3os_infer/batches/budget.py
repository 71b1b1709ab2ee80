"""Batch requests against the key's limits, under a batch class of their own.

A batch request takes from the same per-minute limits as the key's interactive requests
(``[limits]``), but from buckets of its own (the model's id with ``#batch``), so a large
batch never spends the budget that the key's interactive requests run on. When its bucket
is empty a batch request waits for it to refill instead of failing; one that can never
fit (more input or ``max_tokens`` than a minute's limit) fails as the interactive route
would. Its settle gives back what the interactive one does (unused output, cached input).
Batch requests take no slot in the edge's interactive queue: the gate schedules them.
"""

from __future__ import annotations

import asyncio

from ..config import ModelLimits
from ..core import Usage
from ..edge.access.keys import KeyRecord
from ..edge.admission.metering import model_not_allowed, refunds
from ..edge.state import EdgeState
from ..errors import LimitExceeded

BATCH_CLASS = "#batch"
_LONGEST_WAIT = 5.0


def batch_bucket(model_id: str) -> str:
    return model_id + BATCH_CLASS


def _never_fits(limits: ModelLimits, input_tokens: int, max_tokens: int) -> str | None:
    if input_tokens > limits.input_tokens_per_minute:
        return (f"its {input_tokens} input tokens exceed the limit of "
                f"{limits.input_tokens_per_minute} input tokens per minute")
    if max_tokens > limits.output_tokens_per_minute:
        return (f"its max_tokens of {max_tokens} exceeds the limit of "
                f"{limits.output_tokens_per_minute} output tokens per minute")
    return None


class BatchAccounting:
    """The accounting seam (``http/accounting.py``) for one batch request."""

    def __init__(self, edge: EdgeState, key: KeyRecord) -> None:
        self.edge = edge
        self.key = key
        self.model: str | None = None
        self.usage: Usage | None = None
        self.input_tokens = 0
        self._reserved = 0
        self._admitted = False

    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None:
        self.model = model_id
        self.input_tokens = input_tokens
        if not self.key.allows_model(model_id):
            raise model_not_allowed(model_id)
        limits = self.edge.limits.for_model(model_id)
        if (what := _never_fits(limits, input_tokens, max_tokens)) is not None:
            raise LimitExceeded(f"this request can never be admitted: {what}")
        while True:
            decision = await self.edge.limiter.take(self.key.id, batch_bucket(model_id), limits,
                                                    (1, input_tokens, max_tokens))
            if decision.allowed:
                break
            await asyncio.sleep(min(max(decision.retry_after, 0.05), _LONGEST_WAIT))
        self._admitted = True
        self._reserved = max_tokens

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        if not self._admitted:
            return
        self._admitted = False
        self.usage = usage
        unused, cached = refunds(self._reserved, self.input_tokens, usage)
        if unused > 0 or cached > 0:
            await self.edge.limiter.give_back(self.key.id, batch_bucket(model_id),
                                              self.edge.limits.for_model(model_id), unused,
                                              input_tokens=cached)
