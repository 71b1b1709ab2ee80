"""The batch gate on an engine with a fixed number of slots (as llama.cpp's is)."""

from __future__ import annotations

from dataclasses import dataclass

from b3os_infer.batches.gate import Gate
from b3os_infer.edge.admission.queue import QueueConfig, Queues
from b3os_infer.engine.base import EngineInfo
from b3os_infer.errors import model_not_available


@dataclass
class Engine:
    active: int
    waiting: int
    info: EngineInfo
    interactive_waiting: int | None = None   # None: the engine does not tell

    def load(self) -> dict[str, int]:
        load = {"active": self.active, "waiting": self.waiting}
        if self.interactive_waiting is not None:
            load["interactive_waiting"] = self.interactive_waiting
        return load


@dataclass
class Model:
    engine: Engine


class Registry:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, model_id: str) -> Model:
        if model_id != "m":
            raise model_not_available(model_id)
        return Model(self.engine)


def gate(active: int, waiting: int, *, slots: int | None = 4, reserve: int = 1,
         interactive_waiting: int | None = None) -> Gate:
    engine = Engine(active, waiting, EngineInfo(4096, 100, "fake", slots=slots),
                    interactive_waiting)
    return Gate(Registry(engine), Queues(QueueConfig()), reserve)  # type: ignore[arg-type]


def test_a_batch_request_starts_only_on_a_free_slot_beyond_the_reserve():
    assert gate(2, 0).may_start("m", 0)
    assert not gate(3, 0).may_start("m", 0)          # the last free slot is the reserve
    assert gate(3, 0, reserve=0).may_start("m", 0)
    assert not gate(4, 0, reserve=0).may_start("m", 0)


def test_an_engine_without_a_slot_count_is_bounded_by_the_concurrency_alone():
    assert gate(50, 0, slots=None).may_start("m", 0)


def test_a_wait_beyond_the_batchs_own_queued_requests_is_contention():
    assert not gate(4, 1).contended("m", 1)           # the one waiting may be the batch's
    assert gate(4, 2).contended("m", 1)
    assert not gate(3, 2).may_start("m", 1)


def test_an_engine_that_counts_its_interactive_waiting_is_read_exactly():
    # two waiting, neither interactive: no contention, however few the batch runs
    assert not gate(4, 2, interactive_waiting=0).contended("m", 0)
    # one interactive waiting, though the batch runs more than wait: contention
    assert gate(4, 2, interactive_waiting=1).contended("m", 2)
    assert not gate(2, 0, interactive_waiting=1).may_start("m", 0)


def test_interactive_requests_queued_at_the_edge_are_contention():
    queued = gate(0, 0)
    queued.queues.get("m").waiting = 1
    assert queued.contended("m", 0) and not queued.may_start("m", 0)


def test_a_model_not_served_lets_its_request_fail_at_once():
    assert gate(4, 4).may_start("other", 0) and not gate(0, 0).contended("other", 0)
