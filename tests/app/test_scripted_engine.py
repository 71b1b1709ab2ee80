"""The scripted engine through the real app and the official SDKs: text, tools, failures."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from b3os_infer.engine.scripted.script import Reply, When

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello from the script.", repeat=True)
WEATHER_CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                     '</tool_call>')
WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}
USER = [{"role": "user", "content": "Say hello"}]


async def test_a_scripted_reply_reaches_both_sdks_whole_and_streamed(scripted_app):
    app = await scripted_app(HELLO)
    message = await app.anthropic.messages.create(model=app.model, max_tokens=50, messages=USER)
    async with app.anthropic.messages.stream(model=app.model, max_tokens=50,
                                             messages=USER) as stream:
        streamed = await stream.get_final_message()
    completion = await app.openai.chat.completions.create(model=app.model, messages=USER)
    chunks = [c async for c in await app.openai.chat.completions.create(
        model=app.model, messages=USER, stream=True,
        stream_options={"include_usage": True})]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert message.content[0].text == streamed.content[0].text == "Hello from the script."
    assert completion.choices[0].message.content == text == "Hello from the script."
    assert message.usage.output_tokens == streamed.usage.output_tokens == 4   # 4 pieces
    assert completion.usage.completion_tokens == chunks[-1].usage.completion_tokens == 4
    assert message.stop_reason == "end_turn" and completion.choices[0].finish_reason == "stop"


async def test_a_scripted_tool_call_is_a_tool_use_block_and_openai_tool_calls(scripted_app):
    app = await scripted_app(Reply(WEATHER_CALL.text, repeat=True))
    message = await app.anthropic.messages.create(
        model=app.model, max_tokens=100, messages=USER, tools=[WEATHER_TOOL])
    completion = await app.openai.chat.completions.create(
        model=app.model, messages=USER, tools=[{"type": "function", "function": {
            "name": "get_weather", "parameters": WEATHER_TOOL["input_schema"]}}])
    (block,) = message.content
    (call,) = completion.choices[0].message.tool_calls
    assert (block.type, block.name, block.input) == ("tool_use", "get_weather",
                                                     {"city": "Paris"})
    assert message.stop_reason == "tool_use"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert completion.choices[0].finish_reason == "tool_calls"


async def test_a_tool_result_reaches_the_engine_and_picks_the_reply_that_waits_for_it(
        scripted_app):
    app = await scripted_app([WEATHER_CALL,
                              Reply("It is sunny.", when=When(last_user_contains="18 C"))])
    first = await app.anthropic.messages.create(
        model=app.model, max_tokens=100, messages=USER, tools=[WEATHER_TOOL])
    call = first.content[0]
    second = await app.anthropic.messages.create(
        model=app.model, max_tokens=100, tools=[WEATHER_TOOL], messages=[
            *USER, {"role": "assistant", "content": first.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                          "content": "18 C and sunny"}]}])
    assert second.content[0].text == "It is sunny."
    sent = app.engine.received[-1]
    assert "<tool_response>\n18 C and sunny\n</tool_response>" in sent.last_user
    assert '"get_weather"' in sent.text.split("<|im_start|>assistant")[1]


async def test_an_engine_failure_mid_stream_is_the_error_event_of_each_api(scripted_app):
    failing = Reply("one two three four", fail_at=2, error="the GPU fell off", repeat=True)
    app = await scripted_app(failing)
    with pytest.raises(anthropic.APIStatusError) as anthropic_error:
        async with app.anthropic.messages.stream(model=app.model, max_tokens=50,
                                                 messages=USER) as stream:
            async for _ in stream:
                pass
    with pytest.raises(openai.APIError) as openai_error:
        async for _ in await app.openai.chat.completions.create(
                model=app.model, messages=USER, stream=True):
            pass
    assert anthropic_error.value.body["error"]["type"] == "api_error"
    assert "the GPU fell off" in anthropic_error.value.body["error"]["message"]
    assert "the GPU fell off" in openai_error.value.message


async def test_a_refusal_at_admission_is_an_overloaded_answer_before_any_stream(scripted_app):
    app = await scripted_app(Reply("never", refuse="overloaded", repeat=True))
    with pytest.raises(anthropic.APIStatusError) as refused:
        await app.anthropic.messages.create(model=app.model, max_tokens=50, messages=USER,
                                            stream=True)
    assert refused.value.status_code == 529
    assert refused.value.body["error"]["type"] == "overloaded_error"
