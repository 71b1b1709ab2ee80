"""Interactive work first in the embedded llama.cpp engine, on the real default model
(engine/llamacpp/precedence.py): background sequences yield to interactive ones, and the
steps that do so keep every lane running and every reply what it is alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import replace

import pytest

from b3os_infer.config import EngineConfig, LlamacppModel
from b3os_infer.core import ChatRequest, Message, Sampling, TextPart
from b3os_infer.engine.base import Admitted, EngineEvent, GenerationDone, GenerationRequest
from b3os_infer.engine.llamacpp import LlamaCppEngine
from b3os_infer.engine.priority import Priority
from b3os_infer.node.chat_model import ChatModel
from support.engines import loaded_gguf

GREEDY = Sampling(temperature=0)


@pytest.fixture(scope="module")
def model():
    # a fixed budget, not a share of this machine's memory: two lanes on every machine
    chat = loaded_gguf(LlamacppModel(), EngineConfig(parallel=4, kv_memory_mib=2560),
                       b"test-secret")
    asyncio.run(chat.engine.start())
    yield chat
    asyncio.run(chat.engine.close())


def engine_of(model: ChatModel) -> LlamaCppEngine:
    assert isinstance(model.engine, LlamaCppEngine)
    return model.engine


def request(model: ChatModel, text: str, priority: Priority, max_tokens: int = 16,
            sampling: Sampling = GREEDY) -> GenerationRequest:
    chat = ChatRequest(model="m", messages=[Message("user", [TextPart(text)])])
    return GenerationRequest(model.prompt(chat).tokens, max_tokens=max_tokens,
                             sampling=sampling, priority=priority)


def endless(model: ChatModel) -> Sampling:
    """Greedy with every end-of-generation token banned: a reply runs to its max_tokens."""
    engine = engine_of(model)
    banned = tuple((t, -100.0) for t in range(engine.info.vocab_size)
                   if engine.model.ends_turn(t))
    return replace(GREEDY, logit_bias=banned)


async def reply(engine: LlamaCppEngine, generation: GenerationRequest) -> str:
    texts = []
    async for event in engine.generate(generation):
        text = getattr(event, "text", None)
        if text is not None:
            texts.append(text)
    return "".join(texts)


async def until(check, what: str) -> None:
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"timed out waiting for {what}")


def test_replies_that_end_while_others_of_both_classes_run_leave_the_engine_answering(model):
    # the reverted first attempt listed the step's sequences once per turn, before the
    # lanes' steps: a reply that ended in the first lane's step had no slot when the next
    # lane's members were picked, and the scheduler thread died on that assertion
    engine = engine_of(model)
    assert len(engine.plan.lanes) >= 2, "the test needs two lanes"
    classes: list[Priority] = ["interactive", "background", "background", "interactive"]

    async def run() -> list[str]:
        return list(await asyncio.gather(*(reply(engine, request(
            model, f"Say a word about number {i}.", priority, 4 + 6 * i))
            for i, priority in enumerate(classes))))

    assert all(asyncio.run(run()))
    assert engine.healthy()
    assert asyncio.run(reply(engine, request(model, "Hi.", "interactive", 4)))


def test_background_and_interactive_replies_run_together_are_each_what_it_is_alone(model):
    engine = engine_of(model)
    texts: list[tuple[str, Priority]] = [
        ("Name a colour.", "background"), ("Name a fruit.", "background"),
        ("Name a river.", "interactive"), ("Name a city.", "background")]

    async def alone() -> list[str]:
        return [await reply(engine, request(model, t, p)) for t, p in texts]

    async def together() -> list[str]:
        return list(await asyncio.gather(*(reply(engine, request(model, t, p))
                                           for t, p in texts)))

    asyncio.run(alone())   # each prompt's KV left in a slot, so both runs below start alike
    assert asyncio.run(together()) == asyncio.run(alone())


def test_a_free_slot_goes_to_a_waiting_interactive_request_before_an_older_background_one(
        model):
    engine = engine_of(model)
    slots = engine.info.slots
    assert slots is not None

    async def first_event(stream: AsyncGenerator[EngineEvent, None]) -> EngineEvent:
        return await anext(stream)

    async def run() -> None:
        sampling = endless(model)
        running = [engine.generate(request(model, f"Tell story number {i}.", "background",
                                           300, sampling)) for i in range(slots)]
        firsts = [asyncio.create_task(first_event(s)) for s in running]
        await until(lambda: engine.load()["active"] == slots, "every slot taken")
        older = engine.generate(request(model, "Count to five.", "background", 4))
        older_first = asyncio.create_task(first_event(older))
        await until(lambda: engine.load()["waiting"] == 1, "the background one waiting")
        newer = engine.generate(request(model, "Count to three.", "interactive", 4))
        newer_first = asyncio.create_task(first_event(newer))
        await until(lambda: engine.load()["interactive_waiting"] == 1,
                    "the interactive one counted as waiting")
        await asyncio.gather(*firsts)
        await running[0].aclose()   # one slot frees
        assert isinstance(await newer_first, Admitted)
        assert not older_first.done() and engine.load()["waiting"] == 1
        assert engine.load()["interactive_waiting"] == 0
        for stream in running[1:]:
            await stream.aclose()
        assert isinstance(await older_first, Admitted)
        for stream in (older, newer):
            await stream.aclose()

    asyncio.run(run())
    assert engine.healthy()


def test_a_reply_finished_beside_background_work_ends_as_it_would_alone(model):
    engine = engine_of(model)

    async def run() -> GenerationDone | None:
        background = asyncio.create_task(reply(engine, request(
            model, "Tell a long story.", "background", 64, endless(model))))
        done = None
        async for event in engine.generate(request(model, "Count to ten.", "interactive", 5)):
            if isinstance(event, GenerationDone):
                done = event
        await background
        return done

    done = asyncio.run(run())
    assert done is not None and (done.reason, done.generated_tokens) == ("length", 5)
