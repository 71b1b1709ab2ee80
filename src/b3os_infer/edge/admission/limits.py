"""Per-key, per-model token buckets: requests, input tokens and output tokens per minute.

Each bucket holds up to its per-minute limit and refills continuously at limit/60 per
second. A request takes 1 request, its counted input tokens and its ``max_tokens`` of
output; when it ends, the output it did not produce is given back, and so are the prompt
tokens read from the prefix cache (Anthropic counts only uncached input towards its
input-tokens-per-minute limit). ``MemoryLimiter``
keeps the buckets in this process; ``redis_limits.RedisLimiter`` keeps them in Redis for
several edge replicas, with the same arithmetic in one Lua script.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from ...config import ModelLimits

BUCKETS = ("requests", "input_tokens", "output_tokens")
INPUT, OUTPUT = 1, 2


@dataclass(frozen=True)
class LimitsConfig:
    """``[limits.default]`` and ``[limits."model id"]``; a model's table overrides single
    keys of the default one, the rest come from the default."""

    default: dict[str, int] = field(default_factory=dict)
    models: dict[str, dict[str, int]] = field(default_factory=dict)

    def for_model(self, model_id: str) -> ModelLimits:
        return ModelLimits(**{**self.default, **self.models.get(model_id, {})})


@dataclass(frozen=True)
class BucketState:
    limit: int
    remaining: int
    reset_seconds: float  # until the bucket is full again


@dataclass(frozen=True)
class Snapshot:
    """The buckets of one key and model, as they were at ``at`` (Unix time)."""

    at: float
    buckets: dict[str, BucketState]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: float
    snapshot: Snapshot


def refill(level: float, since: float, now: float, capacity: int) -> float:
    return min(float(capacity), level + max(0.0, now - since) * capacity / 60.0)


def snapshot(now: float, levels: list[float], capacities: tuple[int, ...]) -> Snapshot:
    buckets = {}
    for name, level, capacity in zip(BUCKETS, levels, capacities, strict=True):
        reset = (capacity - level) * 60.0 / capacity if capacity else 0.0
        buckets[name] = BucketState(capacity, max(0, math.floor(level)), max(0.0, reset))
    return Snapshot(now, buckets)


class Limiter(Protocol):
    async def take(self, key_id: str, model_id: str, limits: ModelLimits,
                   amounts: tuple[int, int, int]) -> Decision: ...

    async def give_back(self, key_id: str, model_id: str, limits: ModelLimits,
                        output_tokens: int, input_tokens: int = 0) -> None:
        """Return tokens taken at admission, each bucket at most to its capacity."""
        ...

    async def peek(self, key_id: str, model_id: str, limits: ModelLimits) -> Snapshot: ...

    async def close(self) -> None: ...


class MemoryLimiter:
    """Buckets in this process: right for one edge process, wrong for several."""

    def __init__(self) -> None:
        self._levels: dict[tuple[str, str, int], tuple[float, float]] = {}
        self._lock = asyncio.Lock()

    def _levels_now(self, key_id: str, model_id: str, caps: tuple[int, ...],
                    now: float) -> list[float]:
        levels = []
        for i, cap in enumerate(caps):
            level, since = self._levels.get((key_id, model_id, i), (float(cap), now))
            levels.append(refill(level, since, now, cap))
        return levels

    async def take(self, key_id: str, model_id: str, limits: ModelLimits,
                   amounts: tuple[int, int, int]) -> Decision:
        caps, now = limits.capacities, time.time()
        async with self._lock:
            levels = self._levels_now(key_id, model_id, caps, now)
            wait = max((need - level) * 60.0 / cap for need, level, cap
                       in zip(amounts, levels, caps, strict=True))
            if wait <= 0:
                levels = [level - need for level, need in zip(levels, amounts, strict=True)]
                for i, level in enumerate(levels):
                    self._levels[(key_id, model_id, i)] = (level, now)
        return Decision(wait <= 0, max(0.0, wait), snapshot(now, levels, caps))

    async def give_back(self, key_id: str, model_id: str, limits: ModelLimits,
                        output_tokens: int, input_tokens: int = 0) -> None:
        caps, now = limits.capacities, time.time()
        async with self._lock:
            levels = self._levels_now(key_id, model_id, caps, now)
            for i, amount in ((INPUT, input_tokens), (OUTPUT, output_tokens)):
                self._levels[(key_id, model_id, i)] = (
                    min(float(caps[i]), levels[i] + amount), now)

    async def peek(self, key_id: str, model_id: str, limits: ModelLimits) -> Snapshot:
        caps, now = limits.capacities, time.time()
        async with self._lock:
            return snapshot(now, self._levels_now(key_id, model_id, caps, now), caps)

    async def close(self) -> None:
        return None
