"""Per-model concurrency: so many requests run, so many wait; beyond that, 529.

Counted in each edge process (a fleet of N edges lets N times as many through); the
engine behind a node has its own scheduler on top of this.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ...config import QueueLimits
from ...errors import Overloaded


@dataclass(frozen=True)
class QueueConfig:
    """``[concurrency.default]`` and ``[concurrency."model id"]``, merged like limits."""

    default: dict[str, int] = field(default_factory=dict)
    models: dict[str, dict[str, int]] = field(default_factory=dict)

    def for_model(self, model_id: str) -> QueueLimits:
        return QueueLimits(**{**self.default, **self.models.get(model_id, {})})


class ModelQueue:
    def __init__(self, model_id: str, limits: QueueLimits) -> None:
        self.model_id = model_id
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.running)
        self.running = 0
        self.waiting = 0

    async def enter(self) -> None:
        if self._slots.locked() and self.waiting >= self.limits.waiting:
            raise Overloaded(
                f"{self.model_id} is busy: {self.running} requests are running and "
                f"{self.waiting} are waiting; retry shortly", code="model_busy",
                retry_after=1)
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1

    def leave(self) -> None:
        self.running -= 1
        self._slots.release()


class Queues:
    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        self._queues: dict[str, ModelQueue] = {}

    def get(self, model_id: str) -> ModelQueue:
        queue = self._queues.get(model_id)
        if queue is None:
            queue = self._queues[model_id] = ModelQueue(model_id,
                                                        self.config.for_model(model_id))
        return queue

    def load(self) -> dict[str, dict[str, int]]:
        return {m: {"running": q.running, "waiting": q.waiting}
                for m, q in self._queues.items()}
