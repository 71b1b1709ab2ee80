"""Batch requests run below interactive ones, and against the key's limits in a batch class.

On the scripted engine with delays: an interactive request is admitted while a batch
request runs (the batch holds no slot of the edge's interactive queue), a waiting
interactive request makes the runner preempt a batch request (which runs again from its
start and still succeeds), also when only the engine's count of its waiting interactive
requests tells, batch requests reach the engine as background work and interactive ones
as interactive, and batch requests take from buckets of their own.
"""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from b3os_infer.batches.budget import batch_bucket
from b3os_infer.config import BatchSettings
from b3os_infer.engine.scripted.script import Reply, When
from support.batch_app import BatchApp, batch_app, until

pytestmark = pytest.mark.anyio

SLOW_BATCH = Reply(" ".join(["word"] * 40), delay_s=0.05, repeat=True,
                   when=When(last_user_contains="batch"))
SLOW_CHAT = Reply(" ".join(["busy"] * 20), delay_s=0.05, repeat=True,
                  when=When(last_user_contains="slow"))
QUICK_CHAT = Reply("Right away.", repeat=True)
# an interactive request the engine keeps waiting for a slot a while
WAITING_CHAT = Reply("Seated at last.", first_delay_s=0.5, repeat=True,
                     when=When(last_user_contains="waiting"))


def params(model: str, text: str, max_tokens: int = 64) -> dict[str, object]:
    return {"model": model, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": text}]}


def priorities(app: BatchApp, word: str) -> set[str]:
    return {r.request.priority for r in app.engine.received if word in r.text}


def batch_prompts(app: BatchApp) -> int:
    return sum("batch" in r.last_user for r in app.engine.received)


async def ended(app: BatchApp, batch_id: str) -> None:
    async def done() -> bool:
        batch = await app.anthropic.messages.batches.retrieve(batch_id)
        return batch.processing_status == "ended"
    await until(done, f"{batch_id} ended")


async def ask(app: BatchApp, text: str) -> str:
    message = await app.anthropic.messages.create(**params(app.model, text))  # type: ignore[arg-type]
    return message.content[0].text  # type: ignore[union-attr]


async def test_an_interactive_request_is_admitted_while_a_batch_request_runs(tmp_path):
    # one interactive slot and no queue: a batch holding that slot would make this a 529
    async with batch_app(tmp_path, [SLOW_BATCH, QUICK_CHAT],
                         queue={"running": 1, "waiting": 0}) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "b", "params": params(app.model, "a batch job")}])
        await until(lambda: app.engine.load()["active"] == 1, "the batch request running")
        assert await ask(app, "now please") == "Right away."
        assert app.service.store.database.counts(batch.id) == {"pending": 1}   # still running
        assert app.service.runner.preempted == 0


async def test_a_waiting_interactive_request_preempts_a_batch_request_that_then_reruns(
        tmp_path):
    async with batch_app(tmp_path, [SLOW_BATCH, SLOW_CHAT, QUICK_CHAT],
                         queue={"running": 1, "waiting": 4}) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "b", "params": params(app.model, "a batch job")}])
        await until(lambda: app.engine.load()["active"] == 1, "the batch request running")
        first, second = await asyncio.gather(ask(app, "slow one"), ask(app, "quick one"))
        assert first.startswith("busy") and second == "Right away."
        assert app.service.runner.preempted >= 1
        await ended(app, batch.id)
        assert app.service.store.database.counts(batch.id) == {"succeeded": 1}
        assert batch_prompts(app) >= 2   # it ran again from its start
        lines = await app.anthropic.messages.batches.results(batch.id)
        result = [line async for line in lines][0].result
        assert result.type == "succeeded"
        assert result.message.content[0].text == SLOW_BATCH.text  # type: ignore[union-attr]


async def test_batch_requests_reach_the_engine_as_background_and_others_as_interactive(
        tmp_path):
    async with batch_app(tmp_path, [SLOW_BATCH, QUICK_CHAT]) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "b", "params": params(app.model, "a batch job", 4)}])
        await ended(app, batch.id)
        assert await ask(app, "now please") == "Right away."
        completion = await app.openai.completions.create(model=app.model, prompt="now raw",
                                                         max_tokens=4)
        assert completion.choices[0].text == "Right away."
        assert priorities(app, "batch") == {"background"}
        assert priorities(app, "now please") == {"interactive"}
        assert priorities(app, "now raw") == {"interactive"}


async def test_an_interactive_request_waiting_in_the_engine_preempts_a_batch_request(
        tmp_path):
    # the edge queues nobody (room for all), so only the engine's own count of the
    # interactive requests it keeps waiting can tell the runner to give a slot back
    async with batch_app(tmp_path, [SLOW_BATCH, WAITING_CHAT],
                         queue={"running": 8, "waiting": 4}) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "b", "params": params(app.model, "a batch job")}])
        await until(lambda: app.engine.load()["active"] == 1, "the batch request running")
        assert await ask(app, "still waiting") == "Seated at last."
        assert app.service.runner.preempted >= 1
        await ended(app, batch.id)
        lines = await app.anthropic.messages.batches.results(batch.id)
        result = [line async for line in lines][0].result
        assert result.type == "succeeded"
        assert result.message.content[0].text == SLOW_BATCH.text  # type: ignore[union-attr]


async def test_batch_requests_take_from_buckets_of_their_own(tmp_path):
    async with batch_app(tmp_path, [QUICK_CHAT], limits={"requests_per_minute": 2}) as app:
        for _ in range(2):
            await ask(app, "hi")
        with pytest.raises(anthropic.RateLimitError):
            await ask(app, "hi")
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model, "a batch job")}
            for i in range(2)])
        await until(lambda: app.service.store.database.counts(batch.id) == {"succeeded": 2},
                    "both batch requests done")
        limits = app.edge.limits.for_model(app.model)
        left = await app.edge.limiter.peek(app.mine.anthropic.api_key.split("_")[1],
                                           batch_bucket(app.model), limits)
        assert left.buckets["requests"].remaining == 0


async def test_a_batch_request_that_can_never_fit_the_limits_is_errored(tmp_path):
    async with batch_app(tmp_path, [QUICK_CHAT],
                         limits={"output_tokens_per_minute": 100}) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "big", "params": params(app.model, "a batch job", 500)},
            {"custom_id": "small", "params": params(app.model, "a batch job", 50)}])
        await ended(app, batch.id)
        found = {line.custom_id: line.result async for line in
                 await app.anthropic.messages.batches.results(batch.id)}
        assert found["small"].type == "succeeded"
        big = found["big"]
        assert big.type == "errored"
        assert big.error.error.type == "rate_limit_error"  # type: ignore[union-attr]
        assert big.error.model_dump()["b3os"]["code"] == "request_exceeds_limit"  # type: ignore[union-attr]


async def test_at_most_concurrency_batch_requests_run_at_once(tmp_path):
    settings = BatchSettings(concurrency=2)
    async with batch_app(tmp_path, [SLOW_BATCH], settings=settings) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model, "a batch job", 8)}
            for i in range(5)])
        most = 0

        def watch() -> bool:
            nonlocal most
            most = max(most, app.engine.load()["active"])
            return app.service.store.database.counts(batch.id) == {"succeeded": 5}
        await until(watch, "all five done")
        assert most == 2
