"""When a batch request may take a slot, and when it must give one back.

Interactive requests come first. A batch request starts only when nobody waits (no
interactive request queued at the edge for the model, none waiting in its engine) and
the engine has a free slot beyond ``reserve_slots``; an engine without a fixed number of
slots (the scripted and upstream engines) is bounded by the batch concurrency alone. While
batch requests run, an interactive request that has to wait makes the runner preempt one:
it is cancelled, its slot freed, and it runs again later from its start.
"""

from __future__ import annotations

from ..edge.admission.queue import Queues
from ..errors import EngineUnavailable, NotFound
from ..node.registry import ModelRegistry


class Gate:
    def __init__(self, registry: ModelRegistry, queues: Queues, reserve_slots: int) -> None:
        self.registry = registry
        self.queues = queues
        self.reserve_slots = reserve_slots

    def _engine_load(self, model_id: str) -> tuple[int, int, int | None] | None:
        try:
            engine = self.registry.get(model_id).engine
        except (NotFound, EngineUnavailable):   # not served, or unreadable: fails at once
            return None
        load = engine.load()
        return load.get("active", 0), load.get("waiting", 0), engine.info.slots

    def contended(self, model_id: str, batch_running: int) -> bool:
        """Someone other than the batch waits for this model: at the edge, or in the
        engine beyond the ``batch_running`` sequences the batch itself may have queued."""
        if self.queues.get(model_id).waiting > 0:
            return True
        load = self._engine_load(model_id)
        return load is not None and load[1] > batch_running

    def may_start(self, model_id: str, batch_running: int) -> bool:
        if self.contended(model_id, batch_running):
            return False
        load = self._engine_load(model_id)
        if load is None:   # a model not served: the request fails at once, as it should
            return True
        active, waiting, slots = load
        return slots is None or active + waiting + 1 + self.reserve_slots <= slots
