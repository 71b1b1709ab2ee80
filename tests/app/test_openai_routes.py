"""The OpenAI routes in process on the scripted engine, through the official SDK:
errors in OpenAI's shape, streams against whole replies, tool calls, choices, usage,
stop strings, log-probabilities and legacy completions."""

from __future__ import annotations

import json

import openai
import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello from the script.", repeat=True)
USER = [{"role": "user", "content": "Say hello"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
             '</tool_call>', repeat=True)


async def test_an_unknown_model_is_a_not_found_error_with_the_b3os_code(scripted_app):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.NotFoundError) as info:
        await app.openai.chat.completions.create(model="gpt-4o", messages=USER)
    assert info.value.code == "model_not_available" and info.value.param == "model"
    assert info.value.body["type"] == "not_found_error"
    assert info.value.request_id and info.value.request_id.startswith("req_")


@pytest.mark.parametrize("extra, param, code", [
    ({"n": 9}, "n", "invalid_request"),
    ({"temperature": 3}, "temperature", "invalid_request"),
    ({"top_logprobs": 2}, "top_logprobs", "invalid_request"),
    ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "unsupported_parameter"),
    ({"functions": [{"name": "f"}]}, "functions", "unsupported_parameter"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]},
     "messages[0].content[0]", "unsupported_parameter"),
    ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0].type",
     "unsupported_parameter"),
    ({"response_format": {"type": "xml"}}, "response_format.type", "unsupported_parameter"),
    ({"extra_body": {"bogus": 1}}, "bogus", "unsupported_parameter"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content",
     "invalid_request"),
])
async def test_bad_requests_are_openai_bad_request_errors_naming_the_field(
        scripted_app, extra, param, code):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.chat.completions.create(
            **{"model": app.model, "messages": USER, "max_tokens": 5, **extra})
    assert (info.value.status_code, info.value.param, info.value.code) == (400, param, code)
    assert info.value.body["type"] == "invalid_request_error"
    assert info.value.body["message"].startswith(param)


async def test_a_wrong_key_is_an_authentication_error(scripted_app):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.AuthenticationError):
        await app.openai.with_options(api_key="wrong").models.list()


async def test_a_stream_says_what_the_whole_reply_says_and_ends_with_the_usage(
        scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.chat.completions.create(model=app.model, messages=USER)
    chunks = [c async for c in await app.openai.chat.completions.create(
        model=app.model, messages=USER, stream=True, stream_options={"include_usage": True})]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content == "Hello from the script."
    roles = [c.choices[0].delta.role for c in chunks if c.choices]
    assert roles[0] == "assistant" and not any(roles[1:])
    assert chunks[-2].choices[0].finish_reason == whole.choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert all(c.usage is None for c in chunks[:-1])
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + \
        whole.usage.completion_tokens


async def test_without_include_usage_no_chunk_has_a_usage_key(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.http.post("/chat/completions", headers={
        "authorization": f"Bearer {app.key}"}, json={
        "model": app.model, "messages": USER, "stream": True})
    frames = response.text.split("\n\n")
    assert frames[-2] == "data: [DONE]" and frames[-1] == ""
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[:-2]
              if not f.startswith(":")]
    assert all("usage" not in c for c in chunks)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


async def test_the_stream_helper_rebuilds_the_final_completion(scripted_app):
    app = await scripted_app(HELLO)
    async with app.openai.chat.completions.stream(model=app.model, messages=USER) as stream:
        deltas = [e.delta async for e in stream if e.type == "content.delta"]
        final = await stream.get_final_completion()
    assert "".join(deltas) == final.choices[0].message.content == "Hello from the script."
    assert final.choices[0].message.role == "assistant"


async def test_max_tokens_cuts_the_reply_with_finish_reason_length(scripted_app):
    app = await scripted_app(HELLO)
    short = await app.openai.chat.completions.create(model=app.model, messages=USER,
                                                     max_tokens=2)
    assert short.choices[0].finish_reason == "length"
    assert short.usage.completion_tokens == 2
    assert short.choices[0].message.content == "Hello from"


async def test_a_stop_string_ends_the_reply_before_it_whole_and_streamed(scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.chat.completions.create(model=app.model, messages=USER,
                                                     stop=["script"])
    chunks = [c async for c in await app.openai.chat.completions.create(
        model=app.model, messages=USER, stop="script", stream=True)]
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert whole.choices[0].message.content == streamed == "Hello from the "
    assert whole.choices[0].finish_reason == chunks[-1].choices[0].finish_reason == "stop"


async def test_a_scripted_tool_call_streams_as_deltas_the_sdk_accumulates(scripted_app):
    app = await scripted_app(CALL)
    kwargs = {"model": app.model, "messages": USER, "tools": [WEATHER]}
    whole = await app.openai.chat.completions.create(**kwargs)
    (call,) = whole.choices[0].message.tool_calls
    assert call.id.startswith("call_") and call.type == "function"
    assert whole.choices[0].message.content is None
    chunks = [c async for c in await app.openai.chat.completions.create(stream=True, **kwargs)]
    entries = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert all(e.index == 0 for e in entries)
    assert entries[0].id.startswith("call_") and entries[0].function.name == "get_weather"
    assert all(e.id is None and e.function.name is None for e in entries[1:])
    streamed = "".join(e.function.arguments or "" for e in entries)
    assert json.loads(streamed) == json.loads(call.function.arguments) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    async with app.openai.chat.completions.stream(**kwargs) as stream:
        final = await stream.get_final_completion()
    (accumulated,) = final.choices[0].message.tool_calls
    assert accumulated.function.name == "get_weather"
    assert json.loads(accumulated.function.arguments) == {"city": "Paris"}


async def test_a_tool_result_answers_the_call_and_an_unanswered_call_is_refused(
        scripted_app):
    app = await scripted_app(HELLO)
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    answered = await app.openai.chat.completions.create(
        model=app.model, tools=[WEATHER], messages=[
            *USER, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}])
    assert answered.choices[0].message.content == "Hello from the script."
    assert "18 C" in app.engine.received[-1].last_user
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.chat.completions.create(
            model=app.model, tools=[WEATHER], messages=[
                *USER, {"role": "assistant", "tool_calls": [call]},
                {"role": "user", "content": "and?"}])
    assert info.value.param == "messages[1]" and "call_1" in info.value.message


async def test_n_choices_are_numbered_and_streamed_side_by_side(scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.chat.completions.create(model=app.model, messages=USER, n=3)
    assert [c.index for c in whole.choices] == [0, 1, 2]
    assert whole.usage.completion_tokens == 3 * 4
    texts = {i: "" for i in range(3)}
    async for chunk in await app.openai.chat.completions.create(
            model=app.model, messages=USER, n=3, stream=True):
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
    assert list(texts.values()) == [c.message.content for c in whole.choices]


async def test_logprobs_cover_the_reply_tokens_whole_and_streamed(scripted_app):
    app = await scripted_app(HELLO)
    kwargs = {"model": app.model, "messages": USER, "logprobs": True, "top_logprobs": 1}
    whole = await app.openai.chat.completions.create(**kwargs)
    entries = whole.choices[0].logprobs.content
    assert "".join(e.token for e in entries) == whole.choices[0].message.content
    assert all(e.logprob <= 0 and len(e.top_logprobs) == 1 for e in entries)
    assert all(bytes(e.bytes).decode() == e.token for e in entries)
    chunks = [c async for c in await app.openai.chat.completions.create(stream=True, **kwargs)]
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                for e in c.choices[0].logprobs.content]
    assert [e.token for e in streamed] == [e.token for e in entries]
    plain = await app.openai.chat.completions.create(model=app.model, messages=USER)
    assert plain.choices[0].logprobs is None


async def test_legacy_completions_echo_the_prompt_and_take_token_ids(scripted_app):
    app = await scripted_app(HELLO)
    echoed = await app.openai.completions.create(model=app.model, prompt="Hi:", echo=True)
    assert echoed.object == "text_completion"
    assert echoed.choices[0].text == "Hi:Hello from the script."
    tokens = await app.openai.completions.create(model=app.model, prompt=[72, 105],
                                                 echo=True, max_tokens=1)
    assert tokens.choices[0].text == "HiHello"
    assert tokens.choices[0].finish_reason == "length"
    many = await app.openai.completions.create(model=app.model, prompt=["a", [98]], n=2)
    assert [c.index for c in many.choices] == [0, 1, 2, 3]
    scored = await app.openai.completions.create(model=app.model, prompt="x", logprobs=1)
    logprobs = scored.choices[0].logprobs
    assert "".join(logprobs.tokens) == scored.choices[0].text
    assert logprobs.text_offset == [0, 5, 10, 14]


async def test_a_legacy_stream_says_what_the_whole_completion_says(scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.completions.create(model=app.model, prompt="Hi:", echo=True)
    chunks = [c async for c in await app.openai.completions.create(
        model=app.model, prompt="Hi:", echo=True, stream=True,
        stream_options={"include_usage": True})]
    assert "".join(c.choices[0].text for c in chunks if c.choices) == whole.choices[0].text
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage


@pytest.mark.parametrize("extra, param, code", [
    ({"suffix": "y"}, "suffix", "unsupported_parameter"),
    ({"best_of": 3}, "best_of", "invalid_request"),
    ({"echo": True, "logprobs": 1}, "echo", "invalid_request"),
    ({"prompt": [[1, "a"]]}, "prompt[0][1]", "invalid_request"),
    ({"prompt": [1, 99999]}, "prompt", "invalid_request"),
])
async def test_legacy_bad_requests_name_the_field(scripted_app, extra, param, code):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.completions.create(**{"model": app.model, "prompt": "x", **extra})
    assert (info.value.param, info.value.code) == (param, code)
