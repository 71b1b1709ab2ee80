"""When a batch request may take a slot, and when it must give one back.

Interactive requests come first. A batch request starts only when nobody waits (no
interactive request queued at the edge for the model, none waiting in its engine) and
the engine has a free slot beyond ``reserve_slots``; an engine without a fixed number of
slots (the scripted and upstream engines) is bounded by the batch concurrency alone. While
batch requests run, an interactive request that has to wait makes the runner preempt one:
it is cancelled, its slot freed, and it runs again later from its start. Inside the
engine, batch sequences also yield their share of each step to interactive ones
(engine/llamacpp/precedence.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..edge.admission.queue import Queues
from ..errors import EngineUnavailable, NotFound
from ..node.registry import ModelRegistry


class Gate:
    def __init__(self, registry: ModelRegistry, queues: Queues, reserve_slots: int) -> None:
        self.registry = registry
        self.queues = queues
        self.reserve_slots = reserve_slots

    def _engine_load(self, model_id: str) -> EngineLoad | None:
        try:
            engine = self.registry.get(model_id).engine
        except (NotFound, EngineUnavailable):   # not served, or unreadable: fails at once
            return None
        load = engine.load()
        return EngineLoad(load.get("active", 0), load.get("waiting", 0),
                          load.get("interactive_waiting"), engine.info.slots)

    def contended(self, model_id: str, batch_running: int) -> bool:
        """Someone other than the batch waits for this model: at the edge, or in the
        engine. An engine that counts its interactive sequences waiting for a slot
        (``interactive_waiting``: the llama.cpp and scripted engines) is read exactly; of
        one that does not, the waiting beyond the ``batch_running`` sequences the batch
        itself may have queued."""
        if self.queues.get(model_id).waiting > 0:
            return True
        load = self._engine_load(model_id)
        if load is None:
            return False
        if load.interactive_waiting is not None:
            return load.interactive_waiting > 0
        return load.waiting > batch_running

    def may_start(self, model_id: str, batch_running: int) -> bool:
        if self.contended(model_id, batch_running):
            return False
        load = self._engine_load(model_id)
        if load is None:   # a model not served: the request fails at once, as it should
            return True
        return load.slots is None or \
            load.active + load.waiting + 1 + self.reserve_slots <= load.slots


@dataclass(frozen=True)
class EngineLoad:
    """What the gate reads of an engine: its sequences running and waiting, of those
    waiting the interactive ones (None: it does not tell), and its slots (None: not
    fixed)."""

    active: int
    waiting: int
    interactive_waiting: int | None
    slots: int | None
