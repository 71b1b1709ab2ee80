"""Input tokens per minute count only the prompt that was not read from cache, as
Anthropic counts them: the edge takes the whole prompt at admission and gives the cached
part back when the reply is settled."""

from __future__ import annotations

import anthropic
import openai
import pytest

from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.engine.scripted.script import Reply, Script

pytestmark = pytest.mark.anyio

# 60,000 input tokens a minute (1,000 a second of refill) and prompts of about 24,000
# (the scripted engine counts bytes): two uncached prompts a minute fit, a third does not
LIMITS = LimitsConfig(default={"input_tokens_per_minute": 60_000})
PROMPT = "The lanterns along the harbour are lit at dusk. " * 500


def _script(prefix_cache: bool) -> Script:
    return Script(replies=(Reply("OK.", repeat=True),), prefix_cache=prefix_cache,
                  context_window=32_768)


async def _ask(app, question: str) -> anthropic.types.Message:
    return await app.anthropic.messages.create(
        model=app.model, max_tokens=16,
        messages=[{"role": "user", "content": PROMPT + question}])


async def _input_left(app) -> int:
    key_id = app.anthropic.api_key.split("_")[1]
    snap = await app.edge.limiter.peek(key_id, app.model, app.edge.limits.for_model(app.model))
    return snap.buckets["input_tokens"].remaining


async def test_cached_prompt_tokens_go_back_to_the_input_bucket(scripted_app):
    cached_app = await scripted_app(_script(prefix_cache=True), limits=LIMITS)
    first = await _ask(cached_app, "One?")
    assert first.usage.cache_read_input_tokens == 0
    before = await _input_left(cached_app)
    second = await _ask(cached_app, "Two?")
    after = await _input_left(cached_app)
    cached = second.usage.cache_read_input_tokens
    assert cached > 0.95 * len(PROMPT)
    # the second request took its whole prompt and got the cached part back: only its
    # uncached input (and the bucket's refill meanwhile) changed the level
    uncached = second.usage.input_tokens
    assert before - uncached - 5 <= after <= before - uncached + 1_000


async def test_mostly_cached_prompts_are_admitted_where_uncached_ones_are_refused(
        scripted_app):
    uncached_app = await scripted_app(_script(prefix_cache=False), limits=LIMITS)
    for i in range(2):
        await _ask(uncached_app, f"Question {i}?")
    with pytest.raises(anthropic.RateLimitError):
        await _ask(uncached_app, "Question 2?")

    cached_app = await scripted_app(_script(prefix_cache=True), limits=LIMITS)
    for i in range(10):
        reply = await _ask(cached_app, f"Question {i}?")
        assert reply.content[0].text == "OK."  # type: ignore[union-attr]
        if i:
            assert reply.usage.cache_read_input_tokens > 0.95 * len(PROMPT)


async def test_a_prompt_over_the_window_takes_nothing_from_the_input_bucket(scripted_app):
    # Claude Code sends a prompt past the window before it compacts: the 400 it gets must
    # not spend a minute's input on a prompt the model never read
    app = await scripted_app(Script(replies=(Reply("OK.", repeat=True),),
                                    context_window=16_384), limits=LIMITS)
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        await _ask(app, "Too long?")
    with pytest.raises(openai.BadRequestError, match="prompt is too long"):
        await app.openai.chat.completions.create(
            model=app.model, max_tokens=16, messages=[{"role": "user", "content": PROMPT}])
    assert await _input_left(app) == 60_000


async def test_a_responses_prompt_over_the_window_takes_nothing_from_the_input_bucket(
        scripted_app):
    # Codex reads the streamed failure (`response.failed`, context_length_exceeded); the
    # whole call is a 400: neither spends input on a prompt the model never read
    app = await scripted_app(Script(replies=(Reply("OK.", repeat=True),),
                                    context_window=16_384), limits=LIMITS)
    with pytest.raises(openai.BadRequestError, match="prompt is too long"):
        await app.openai.responses.create(model=app.model, input=PROMPT)
    stream = await app.openai.responses.create(model=app.model, input=PROMPT, stream=True)
    kinds = [event.type async for event in stream]
    assert kinds[-1] == "response.failed"
    assert await _input_left(app) == 60_000


async def test_a_completions_prompt_over_the_window_is_a_400_streamed_or_not(scripted_app):
    app = await scripted_app(Script(replies=(Reply("OK.", repeat=True),),
                                    context_window=16_384), limits=LIMITS)
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError, match="prompt is too long") as info:
            await app.openai.completions.create(model=app.model, prompt=PROMPT, max_tokens=16,
                                                stream=stream)
        assert info.value.code == "context_length_exceeded"
    assert await _input_left(app) == 60_000
