"""The Anthropic routes in process, on the scripted engine, through the official SDK.

What tests/live proves on a real model, proved here on scripted replies: errors in
Anthropic's shape as the SDK's exception classes, count_tokens against input_tokens,
streams that fold into the non-streamed message, tool_use and thinking blocks, stop
sequences, the model pages and the output limit.
"""

from __future__ import annotations

import json

import anthropic
import pytest

from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}
WEATHER_CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                     '</tool_call>', repeat=True)
THOUGHT = Reply("<think>It is June in Paris.</think>Sunny.", repeat=True)
THINKING = {"type": "enabled", "budget_tokens": 1024}


async def test_a_refused_field_is_a_bad_request_in_anthropics_shape(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    with pytest.raises(anthropic.BadRequestError) as info:
        await app.anthropic.messages.create(model=app.model, max_tokens=10, messages=USER,
                                            extra_body={"container": "c1"})
    body = info.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["b3os"] == {"code": "unsupported_parameter", "param": "container"}
    assert body["request_id"] == info.value.request_id and body["request_id"].startswith("req_")
    assert info.value.response.headers["x-should-retry"] == "false"


async def test_a_wrong_type_deep_in_the_body_names_its_path(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    with pytest.raises(anthropic.BadRequestError) as info:
        await app.anthropic.messages.create(model=app.model, max_tokens=10, messages=[
            {"role": "user", "content": [{"type": "text", "text": "hi"},
                                         {"type": "text", "text": 5}]}])
    assert info.value.body["b3os"] == {"code": "invalid_request",
                                       "param": "messages[0].content[1].text"}
    assert info.value.body["error"]["message"] == ("messages[0].content[1].text: Input should "
                                                   "be a valid string")


async def test_a_system_role_message_gets_the_wording_claude_code_falls_back_on(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    with pytest.raises(anthropic.BadRequestError) as info:
        await app.anthropic.messages.create(model=app.model, max_tokens=10, messages=[
            *USER, {"role": "system", "content": "Be brief."}])
    assert info.value.body["error"]["message"].startswith('Unexpected role "system".')
    assert info.value.body["b3os"]["param"] == "messages[1].role"


async def test_unknown_model_and_bad_key_are_the_sdks_not_found_and_authentication_errors(
        scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    with pytest.raises(anthropic.NotFoundError) as missing:
        await app.anthropic.messages.create(model="nope", max_tokens=10, messages=USER)
    assert missing.value.body["b3os"] == {"code": "model_not_available", "param": "model"}
    wrong = app.anthropic.with_options(api_key="b3os_wrong")
    with pytest.raises(anthropic.AuthenticationError) as denied:
        await wrong.messages.create(model=app.model, max_tokens=10, messages=USER)
    assert denied.value.body["error"]["type"] == "authentication_error"


@pytest.mark.parametrize("stream", [False, True])
async def test_max_tokens_over_the_model_limit_is_lowered_to_it(scripted_app, stream):
    app = await scripted_app(Reply(" ".join(["word"] * 5000), repeat=True))
    info_of_model = await app.anthropic.models.retrieve(app.model)
    kwargs = dict(model=app.model, max_tokens=info_of_model.max_tokens + 1, messages=USER)
    if stream:
        async with app.anthropic.messages.stream(**kwargs) as events:
            message = await events.get_final_message()
    else:
        message = await app.anthropic.messages.create(**kwargs)
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == info_of_model.max_tokens


async def test_the_limits_reserve_the_lowered_max_tokens_not_the_one_sent(scripted_app):
    # 6,000 output tokens a minute: 32,000 could never be admitted, the model's 4,096 can
    limits = LimitsConfig(default={"output_tokens_per_minute": 6000})
    app = await scripted_app(Reply("Fine.", repeat=True), limits=limits)
    message = await app.anthropic.messages.create(model=app.model, max_tokens=32000,
                                                  messages=USER, stream=False,
                                                  timeout=30)
    assert message.content[0].text == "Fine."
    key_id = app.key.split("_")[1]
    snap = await app.edge.limiter.peek(key_id, app.model, app.edge.limits.for_model(app.model))
    # admitted at all: 32,000 was never reserved. The reservation went back but for the
    # tokens written; the bucket refills 100 a second, so on a slow machine it may be full
    # again by now, and only the upper bound holds whatever the timing
    assert 6000 - snap.buckets["output_tokens"].remaining <= message.usage.output_tokens


async def test_count_tokens_equals_the_input_tokens_the_same_request_reports(scripted_app):
    app = await scripted_app(Reply("Fine.", repeat=True))
    prompt = dict(model=app.model, messages=USER, system="You are terse.",
                  tools=[WEATHER_TOOL])
    counted = await app.anthropic.messages.count_tokens(**prompt)
    message = await app.anthropic.messages.create(max_tokens=20, **prompt)
    assert counted.input_tokens == message.usage.input_tokens > 0


async def test_a_stream_folds_into_the_message_the_plain_call_returns(scripted_app):
    app = await scripted_app([THOUGHT])
    kwargs = dict(model=app.model, max_tokens=1100, messages=USER, thinking=THINKING)
    whole = await app.anthropic.messages.create(**kwargs)
    async with app.anthropic.messages.stream(**kwargs) as stream:
        streamed = await stream.get_final_message()
    assert whole.model_dump(exclude={"id"}) == streamed.model_dump(exclude={"id"})
    assert [b.type for b in whole.content] == ["thinking", "text"]


async def test_every_frame_names_its_type_and_blocks_are_numbered_in_order(scripted_app):
    app = await scripted_app([THOUGHT])
    response = await app.http.post("/v1/messages?beta=true", headers={
        "x-api-key": app.key, "anthropic-version": "2023-06-01"}, json={
        "model": app.model, "max_tokens": 1100, "messages": USER, "stream": True,
        "thinking": THINKING})
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [frame.split("\n") for frame in response.text.strip().split("\n\n")]
    events = [(event.removeprefix("event: "), json.loads(data.removeprefix("data: ")))
              for event, data in frames]
    assert all(name == data["type"] for name, data in events)
    starts = [data["index"] for name, data in events if name == "content_block_start"]
    assert starts == [0, 1] and events[-1][0] == "message_stop"
    deltas = [data["delta"]["type"] for name, data in events if name == "content_block_delta"]
    assert deltas.index("signature_delta") < deltas.index("text_delta")


async def test_a_scripted_tool_call_is_a_tool_use_block_whole_and_streamed(scripted_app):
    app = await scripted_app([WEATHER_CALL])
    kwargs = dict(model=app.model, max_tokens=100, messages=USER, tools=[WEATHER_TOOL],
                  tool_choice={"type": "auto"})
    whole = await app.anthropic.messages.create(**kwargs)
    async with app.anthropic.messages.stream(**kwargs) as stream:
        streamed = await stream.get_final_message()
    for message in (whole, streamed):
        (block,) = message.content
        assert (block.type, block.name, block.input) == ("tool_use", "get_weather",
                                                         {"city": "Paris"})
        assert block.id.startswith("toolu_") and block.caller.type == "direct"
        assert message.stop_reason == "tool_use"


async def test_thinking_blocks_and_their_signatures_round_trip(scripted_app):
    app = await scripted_app([THOUGHT])
    first = await app.anthropic.messages.create(model=app.model, max_tokens=1100,
                                                messages=USER, thinking=THINKING)
    thought, answer = first.content
    assert thought.thinking == "It is June in Paris." and thought.signature
    follow = [*USER, {"role": "assistant", "content": [thought.model_dump(), answer.model_dump()]},
              {"role": "user", "content": "And tomorrow?"}]
    again = await app.anthropic.messages.create(model=app.model, max_tokens=1100,
                                                messages=follow, thinking=THINKING)
    assert again.content[0].type == "thinking"
    edited = [{**thought.model_dump(), "thinking": "I made this up."}, answer.model_dump()]
    with pytest.raises(anthropic.BadRequestError) as info:
        await app.anthropic.messages.count_tokens(model=app.model, messages=[
            *USER, {"role": "assistant", "content": edited}, {"role": "user", "content": "?"}])
    assert info.value.body["b3os"] == {"code": "invalid_signature",
                                       "param": "messages[1].content[0]"}


async def test_a_stop_sequence_ends_the_reply_is_reported_and_left_out(scripted_app):
    app = await scripted_app(Reply("one two STOP three four", repeat=True))
    kwargs = dict(model=app.model, max_tokens=50, messages=USER, stop_sequences=["STOP"])
    whole = await app.anthropic.messages.create(**kwargs)
    async with app.anthropic.messages.stream(**kwargs) as stream:
        streamed = await stream.get_final_message()
    for message in (whole, streamed):
        assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")
        assert "STOP" not in message.content[0].text and "three" not in message.content[0].text


async def test_max_tokens_ends_the_reply_with_its_stop_reason(scripted_app):
    app = await scripted_app(Reply("one two three four five", repeat=True))
    message = await app.anthropic.messages.create(model=app.model, max_tokens=2,
                                                  messages=USER)
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 2


async def test_the_model_pages_in_anthropics_shape(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    page = await app.anthropic.models.list(limit=1)
    assert [m.id for m in page.data] == [app.model]
    assert (page.has_more, page.first_id, page.last_id) == (False, app.model, app.model)
    after = await app.anthropic.models.list(after_id=app.model)
    assert after.data == [] and after.first_id is None
    with pytest.raises(anthropic.NotFoundError):
        await app.anthropic.models.retrieve("nope")
    response = await app.http.get("/v1/models", params={"limit": 0},
                                  headers={"x-api-key": app.key})
    assert response.status_code == 400 and response.json()["b3os"]["param"] == "limit"
