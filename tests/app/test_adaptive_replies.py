"""Adaptive thinking through the Anthropic SDK on a reasoning template (the scripted
engine's native one, Qwen3's kind): the model decides. A reply that starts with ``<think>``
comes back as a thinking block and the answer; one that does not is the answer alone, as
from a model never trained to reason (before, it came back as all thinking and no text)."""

from __future__ import annotations

import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
ADAPTIVE = {"type": "adaptive"}
WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


async def ask(app, stream: bool, **fields):
    if not stream:
        return await app.anthropic.messages.create(model=app.model, max_tokens=400,
                                                   messages=ASK, thinking=ADAPTIVE, **fields)
    async with app.anthropic.messages.stream(model=app.model, max_tokens=400, messages=ASK,
                                             thinking=ADAPTIVE, **fields) as events:
        return await events.get_final_message()


@pytest.mark.parametrize("stream", [False, True])
async def test_an_adaptive_reply_without_reasoning_is_all_answer(scripted_app, stream):
    app = await scripted_app(Reply("It is sunny in Paris.", repeat=True))
    reply = await ask(app, stream)
    assert [(b.type, getattr(b, "text", None)) for b in reply.content] == \
        [("text", "It is sunny in Paris.")]
    assert "<think>" not in app.engine.received[-1].text.rsplit("assistant", 1)[-1]


@pytest.mark.parametrize("stream", [False, True])
async def test_an_adaptive_reply_that_opens_think_reasons_then_answers(scripted_app, stream):
    app = await scripted_app(Reply("<think>\nParis in June is warm.\n</think>\n\nSunny.",
                                   repeat=True))
    reply = await ask(app, stream)
    assert [b.type for b in reply.content] == ["thinking", "text"]
    assert (reply.content[0].thinking, reply.content[1].text) == \
        ("Paris in June is warm.", "Sunny.")


async def test_an_adaptive_reply_that_calls_a_tool_straight_away_is_a_tool_call(scripted_app):
    app = await scripted_app(Reply('<tool_call>\n{"name": "get_weather", "arguments": '
                                   '{"city": "Paris"}}\n</tool_call>', repeat=True))
    reply = await ask(app, False, tools=[WEATHER])
    assert reply.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "input", None)) for b in reply.content] == \
        [("tool_use", {"city": "Paris"})]


async def test_an_adaptive_section_the_model_opened_is_closed_by_its_budget(scripted_app):
    app = await scripted_app(Reply("<think>" + " hm" * 3000 + "</think>Sunny.", repeat=True))
    reply = await app.anthropic.messages.create(
        model=app.model, max_tokens=2000, messages=ASK, thinking=ADAPTIVE,
        output_config={"effort": "low"})
    thinking, text = reply.content
    assert thinking.type == "thinking" and text.type == "text"
    # effort low: a budget of 512 tokens, then the engine closes the section itself and the
    # rest of the reply is the answer
    assert 512 <= reply.usage.output_tokens_details.thinking_tokens < 600
    assert text.text.strip().startswith("hm")
