"""Models loaded on demand (node/lifecycle.py): one load for concurrent first requests,
keep_alive, the node's bounds with least-recently-used eviction, pins, and loads that fail.

The engines are scripted ones (restartable, instant); what a build costs is a short sleep
in the loader's thread, so concurrent requests really overlap a load.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from b3os_infer.engine.base import (
    Engine,
    EngineInfo,
    GenerationDone,
    GenerationRequest,
    TokenEvent,
)
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.errors import Conflict
from b3os_infer.node.lifecycle import (
    Bounds,
    CannotLoad,
    Keeper,
    OnDemandEngine,
    Residency,
    load_state,
)

pytestmark = pytest.mark.anyio
MiB = 2**20


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Loader:
    """Builds a scripted engine, counting the builds; ``fail`` makes them raise."""

    def __init__(self, reply: Reply, seconds: float = 0.05) -> None:
        self.engine = ScriptedEngine(Script(replies=(reply,)))
        self.builds = 0
        self.seconds = seconds
        self.fail: Exception | None = None

    def __call__(self) -> Engine:
        self.builds += 1
        time.sleep(self.seconds)
        if self.fail is not None:
            raise self.fail
        return self.engine


def on_demand(keeper: Keeper, name: str, *, keep_alive: int = 300, weights: int = MiB,
              reply: Reply | None = None) -> tuple[OnDemandEngine, Loader]:
    loader = Loader(reply or Reply(text="hello", repeat=True))
    info = EngineInfo(context_window=4096, vocab_size=loader.engine.info.vocab_size,
                      description="not loaded")
    model = OnDemandEngine(name, loader, loader.engine, info, keeper,
                           Residency(keep_alive, weights))
    return model, loader


async def reply(model: OnDemandEngine) -> str:
    request = GenerationRequest(model.tokenize("hi"), max_tokens=8)
    texts = []
    async for event in model.generate(request):
        if isinstance(event, TokenEvent):
            texts.append(event.text)
        else:
            assert not isinstance(event, GenerationDone) or event.reason == "eog"
    return "".join(texts)


def idle(model: OnDemandEngine, seconds: float) -> None:
    """As if its last request ended ``seconds`` ago."""
    model.last_used = time.monotonic() - seconds


async def test_a_model_is_unloaded_until_its_first_request_which_loads_it():
    model, loader = on_demand(Keeper(), "a")
    assert (model.state, loader.builds) == ("unloaded", 0)
    assert model.tokenize("hi") and model.info.description == "not loaded"
    assert await reply(model) == "hello"
    assert (model.state, loader.builds, load_state(model)) == ("loaded", 1, "loaded")
    assert model.info is loader.engine.info and model.load_seconds is not None


async def test_concurrent_first_requests_wait_for_one_load_and_all_get_the_reply():
    model, loader = on_demand(Keeper(), "a")
    loader.seconds = 0.3
    first = asyncio.create_task(reply(model))
    await asyncio.sleep(0.05)
    assert model.state == "loading"
    replies = await asyncio.gather(first, *(reply(model) for _ in range(4)))
    assert replies == ["hello"] * 5
    assert loader.builds == 1


async def test_a_waiter_that_goes_away_leaves_the_load_running_for_the_others():
    model, loader = on_demand(Keeper(), "a")
    loader.seconds = 0.3
    gone = asyncio.create_task(reply(model))
    staying = asyncio.create_task(reply(model))
    await asyncio.sleep(0.05)
    gone.cancel()
    assert await staying == "hello"
    assert gone.cancelled() and loader.builds == 1 and model.state == "loaded"


async def test_keep_alive_zero_unloads_as_soon_as_the_model_is_idle():
    keeper = Keeper()
    model, loader = on_demand(keeper, "a", keep_alive=0)
    await reply(model)
    assert await keeper.reap() == ["a"]
    assert model.state == "unloaded" and not loader.engine.healthy()   # closed
    assert await reply(model) == "hello" and loader.builds == 2        # loads again


async def test_keep_alive_unloads_only_after_that_many_idle_seconds():
    keeper = Keeper()
    model, _ = on_demand(keeper, "a", keep_alive=300)
    await reply(model)
    idle(model, 299)
    assert await keeper.reap() == [] and model.state == "loaded"
    assert 0 < model.keep_alive_left(time.monotonic()) <= 1
    idle(model, 301)
    assert await keeper.reap() == ["a"] and model.state == "unloaded"


async def test_keep_alive_minus_one_never_unloads():
    keeper = Keeper()
    model, _ = on_demand(keeper, "a", keep_alive=-1)
    await reply(model)
    idle(model, 10**6)
    assert await keeper.reap() == [] and model.state == "loaded"
    assert model.keep_alive_left(time.monotonic()) is None


async def test_a_model_with_a_request_running_is_not_unloaded_however_long_idle():
    keeper = Keeper()
    model, _ = on_demand(keeper, "a", keep_alive=0,
                         reply=Reply(text="slow", delay_s=0.2, repeat=True))
    running = asyncio.create_task(reply(model))
    await asyncio.sleep(0.1)
    idle(model, 10**6)
    assert await keeper.reap() == [] and model.state == "loaded"
    assert await running == "slow"
    assert await keeper.reap() == ["a"]


async def test_the_bound_on_loaded_models_unloads_the_least_recently_used_idle_one():
    keeper = Keeper(Bounds(max_models=2))
    a, _ = on_demand(keeper, "a")
    b, _ = on_demand(keeper, "b")
    c, _ = on_demand(keeper, "c")
    await reply(a)
    await reply(b)
    idle(a, 50)
    idle(b, 10)
    await reply(c)
    assert [m.state for m in (a, b, c)] == ["unloaded", "loaded", "loaded"]


async def test_the_bound_on_memory_unloads_until_the_new_weights_fit():
    keeper = Keeper(Bounds(max_bytes=250 * MiB))
    a, _ = on_demand(keeper, "a", weights=100 * MiB)
    b, _ = on_demand(keeper, "b", weights=100 * MiB)
    c, _ = on_demand(keeper, "c", weights=120 * MiB)
    await reply(a)
    await reply(b)
    idle(a, 5)
    await reply(c)
    assert [m.state for m in (a, b, c)] == ["unloaded", "loaded", "loaded"]


async def test_a_pinned_model_is_neither_evicted_nor_unloaded_by_keep_alive():
    keeper = Keeper(Bounds(max_models=1))
    a, _ = on_demand(keeper, "a", keep_alive=0)
    b, _ = on_demand(keeper, "b")
    await reply(a)
    a.pinned = True
    idle(a, 10**6)
    assert await keeper.reap() == []
    with pytest.raises(CannotLoad) as refused:
        await reply(b)
    assert (refused.value.code, refused.value.status) == ("models_busy", 503)
    assert a.state == "loaded" and b.state == "unloaded"


async def test_no_room_beside_busy_models_is_a_retryable_503_and_they_keep_serving():
    keeper = Keeper(Bounds(max_models=1))
    a, _ = on_demand(keeper, "a", reply=Reply(text="slow", delay_s=0.1, repeat=True))
    b, _ = on_demand(keeper, "b")
    running = asyncio.create_task(reply(a))
    await asyncio.sleep(0.1)
    with pytest.raises(CannotLoad) as refused:
        await reply(b)
    assert refused.value.code == "models_busy" and refused.value.retry_after
    assert await running == "slow" and a.state == "loaded" and b.state == "unloaded"


async def test_a_model_whose_load_fails_answers_model_load_failed_and_another_still_serves():
    keeper = Keeper()
    bad, loader = on_demand(keeper, "bad")
    good, _ = on_demand(keeper, "good")
    loader.fail = RuntimeError("llama.cpp could not load /models/bad.gguf")
    with pytest.raises(CannotLoad) as failed:
        await reply(bad)
    assert (failed.value.code, failed.value.status) == ("model_load_failed", 503)
    assert "bad.gguf" in (failed.value.detail or "")       # logged, not sent
    assert "could not be loaded" in (bad.problem() or "") and bad.state == "unloaded"
    assert bad.healthy()     # the node stays up: the next request tries the load again
    assert await reply(good) == "hello"
    loader.fail = None                                      # the file is mended: it loads
    assert await reply(bad) == "hello" and bad.problem() is None


async def test_weights_larger_than_the_memory_left_answer_model_too_large_before_loading():
    keeper = Keeper(memory=lambda: 64 * MiB)
    big, loader = on_demand(keeper, "big", weights=100 * MiB)
    with pytest.raises(CannotLoad) as refused:
        await reply(big)
    assert refused.value.code == "model_too_large" and loader.builds == 0
    assert "100 MiB" in refused.value.message and "64 MiB" in refused.value.message


async def test_weights_larger_than_the_nodes_bound_answer_model_too_large():
    keeper = Keeper(Bounds(max_bytes=50 * MiB))
    big, loader = on_demand(keeper, "big", weights=100 * MiB)
    with pytest.raises(CannotLoad, match="bound on loaded models") as refused:
        await reply(big)
    assert refused.value.code == "model_too_large" and loader.builds == 0


async def test_unloading_by_hand_is_refused_while_a_request_runs_then_done_when_idle():
    keeper = Keeper()
    model, _ = on_demand(keeper, "a", reply=Reply(text="slow", delay_s=0.1, repeat=True))
    running = asyncio.create_task(reply(model))
    await asyncio.sleep(0.05)
    with pytest.raises(Conflict) as busy:
        await model.unload_when_idle()
    assert (busy.value.status, busy.value.code) == (409, "model_busy")
    await running
    assert await model.unload_when_idle() and model.state == "unloaded"


async def test_the_reaper_task_unloads_an_idle_model_by_itself():
    keeper = Keeper(tick_seconds=0.05)
    model, _ = on_demand(keeper, "a", keep_alive=0)
    keeper.start()
    try:
        await reply(model)
        for _ in range(40):
            if model.state == "unloaded":
                break
            await asyncio.sleep(0.05)
        assert model.state == "unloaded"
    finally:
        await keeper.close()
