"""The edge's side of the accounting seam (``http/accounting.py``), one per request.

``admit`` waits for a slot in the model's queue (or raises Overloaded), then takes from
the key's buckets for the model (or raises RateLimited with the wait). ``settle`` gives
back the output tokens that were reserved but not produced, and the prompt tokens that were
read from the prefix cache (``Usage.cached_tokens``: Anthropic counts only uncached input
towards input tokens per minute; how many are cached is known only once the engine ran),
and frees the slot.
"""

from __future__ import annotations

import asyncio
import math

from ...config import ModelLimits
from ...core import Usage
from ...errors import (
    ClientDisconnected,
    LimitExceeded,
    Overloaded,
    PermissionDenied,
    RateLimited,
)
from ..access.keys import KeyRecord
from ..state import EdgeState
from .limits import Snapshot


def model_not_allowed(model_id: str) -> PermissionDenied:
    return PermissionDenied(f"this key may not use {model_id}", code="model_not_allowed",
                            param="model")


def refunds(reserved_output: int, taken_input: int, usage: Usage | None) -> tuple[int, int]:
    """What goes back at settle: the output reserved but not produced, and the prompt
    tokens read from cache (never more than the input taken at admission)."""
    if usage is None:
        return max(0, reserved_output), 0
    return (max(0, reserved_output - usage.output_tokens),
            max(0, min(usage.cached_tokens, taken_input)))


def _never_fits(limits: ModelLimits, input_tokens: int, max_tokens: int
                ) -> LimitExceeded | None:
    if input_tokens > limits.input_tokens_per_minute:
        what = (f"its {input_tokens} input tokens exceed the limit of "
                f"{limits.input_tokens_per_minute} input tokens per minute")
    elif max_tokens > limits.output_tokens_per_minute:
        what = (f"its max_tokens of {max_tokens} exceeds the limit of "
                f"{limits.output_tokens_per_minute} output tokens per minute")
    else:
        return None
    return LimitExceeded(f"this request can never be admitted: {what}")


class EdgeAccounting:
    def __init__(self, edge: EdgeState, key: KeyRecord) -> None:
        self.edge = edge
        self.key = key
        self.model: str | None = None
        self.snapshot: Snapshot | None = None
        self.usage: Usage | None = None
        self.admitted = False
        self.input_tokens = 0
        self.settled = asyncio.Event()
        self.ended = False     # the request is over: nothing more may be admitted for it
        self._reserved_output = 0

    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None:
        try:
            await self._admit(model_id, input_tokens, max_tokens)
        except (RateLimited, Overloaded) as refusal:
            self.edge.metrics.refused(model_id, refusal.code)
            raise

    async def _admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None:
        self.model = model_id
        if not self.key.allows_model(model_id):
            raise model_not_allowed(model_id)
        limits = self.edge.limits.for_model(model_id)
        if (error := _never_fits(limits, input_tokens, max_tokens)) is not None:
            raise error
        queue = self.edge.queues.get(model_id)
        await queue.enter()
        if self.ended:   # it ended while it waited (a fleet node's admission long-poll)
            queue.leave()
            raise ClientDisconnected("the request ended while it waited for a place")
        try:
            decision = await self.edge.limiter.take(self.key.id, model_id, limits,
                                                    (1, input_tokens, max_tokens))
        except BaseException:
            queue.leave()
            raise
        self.snapshot = decision.snapshot
        if not decision.allowed:
            queue.leave()
            wait = math.ceil(decision.retry_after)
            raise RateLimited(f"rate limit reached for {model_id}; retry in {wait} s",
                              retry_after=wait)
        self.admitted = True
        self.input_tokens = input_tokens
        self._reserved_output = max_tokens

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        if self.settled.is_set():
            return
        self.settled.set()
        self.usage = usage
        if not self.admitted:
            return
        self.edge.queues.get(model_id).leave()
        unused, cached = refunds(self._reserved_output, self.input_tokens, usage)
        if unused > 0 or cached > 0:
            limits = self.edge.limits.for_model(model_id)
            await self.edge.limiter.give_back(self.key.id, model_id, limits, unused,
                                              input_tokens=cached)

    async def reset(self) -> None:
        """Undo an admission before the request is tried again elsewhere (failover): the
        slot and the output reserved are given back, and it may be admitted anew."""
        if self.admitted and not self.settled.is_set() and self.model is not None:
            await self.settle(self.model, None)
        self.admitted = False
        self.usage = None
        self.settled = asyncio.Event()

    async def finish(self) -> None:
        """After the response: wait briefly for a settle still on its way, else settle as
        abandoned, so a slot and a reservation are never held forever; an admission still
        on its way is refused."""
        self.ended = True
        if not self.admitted or self.settled.is_set() or self.model is None:
            return
        try:
            await asyncio.wait_for(self.settled.wait(), self.edge.settle_grace_seconds)
        except TimeoutError:
            await self.settle(self.model, None)
