"""The Responses API in process on the scripted engine, through the official SDK: whole
and streamed responses (every event valid against the SDK's types, the streamed result
equal to the whole one), function and custom tool round trips, sealed reasoning, limits,
Codex's request shape, and errors in OpenAI's shape."""

from __future__ import annotations

import json
from typing import get_args

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from b3os_infer.engine.scripted.script import Reply, Script, When

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello from the script.", repeat=True)
# the SDK's event classes by their `type`, to validate each event against its own
SDK_EVENTS = {get_args(c.model_fields["type"].annotation)[0]: c
              for c in get_args(get_args(ResponseStreamEvent)[0])}


def validate(event: dict) -> None:
    SDK_EVENTS[event["type"]].model_validate(event)
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
             '</tool_call>', when=When(last_user_contains="weather"))
ANSWER = Reply("It is sunny in Paris.", when=When(last_user_contains="18 C"))
THINKING = Reply("<think>\nThe user greets me.\n</think>\n\nHello!", repeat=True)


async def raw_events(app, **body) -> list[dict]:
    """The stream as the server wrote it: every event, named and numbered."""
    reply = await app.http.post("/responses", json={"model": app.model, "stream": True,
                                                    **body},
                                headers={"authorization": f"Bearer {app.key}"})
    assert reply.status_code == 200, reply.text
    frames = [f for f in reply.text.split("\n\n") if f.startswith("event: ")]
    events = []
    for frame in frames:
        name, data = frame.split("\n", 1)
        event = json.loads(data.removeprefix("data: "))
        assert name == "event: " + event["type"]
        events.append(event)
    return events


def normalized(response: dict) -> dict:
    """A response without what differs between two calls (ids and times)."""
    for key in ("id", "created_at"):
        response.pop(key, None)
    text = json.dumps(response)
    for prefix in ("msg_", "rs_", "fc_", "ctc_", "call_"):
        while (at := text.find(f'"{prefix}')) >= 0:
            end = text.index('"', at + 1)
            text = text[:at] + '"<id>' + text[end:]
    return json.loads(text)


async def test_a_string_input_gets_a_completed_response_with_usage(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="Say hello",
                                                 instructions="Be brief.")
    assert response.status == "completed" and response.id.startswith("resp_")
    assert response.output_text == "Hello from the script."
    assert [item.type for item in response.output] == ["message"]
    usage = response.usage
    assert usage is not None and usage.output_tokens == 4
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0
    assert "Be brief." in app.engine.received[-1].text
    Response.model_validate(response.model_dump(exclude_unset=True))


async def test_every_streamed_event_validates_against_the_sdk_types_in_sequence(
        scripted_app):
    app = await scripted_app(THINKING)
    events = await raw_events(app, input="hi", reasoning={"effort": "low"},
                              include=["reasoning.encrypted_content"])
    for event in events:
        validate(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds.count("response.completed") == 1 and kinds[-1] == "response.completed"
    assert "response.reasoning_text.delta" in kinds and "response.output_text.delta" in kinds
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [d["type"] for d in done] == ["reasoning", "message"]
    assert done[0]["encrypted_content"] and done[0]["content"][0]["text"].strip() == \
        "The user greets me."
    assert done[1]["content"][0]["text"] == "Hello!" and done[1]["status"] == "completed"
    assert events[-1]["response"]["output"] == done
    assert events[-1]["response"]["usage"]["output_tokens_details"]["reasoning_tokens"] > 0


async def test_the_streamed_response_equals_the_whole_one(scripted_app):
    app = await scripted_app(THINKING)
    ask = {"model": app.model, "input": "hi", "reasoning": {"effort": "low"}}
    whole = await app.openai.responses.create(**ask)
    async with app.openai.responses.stream(**ask) as stream:
        async for _ in stream:
            pass
        streamed = await stream.get_final_response()
    assert streamed.output_text == whole.output_text == "Hello!"
    # (the stream accumulator adds `parsed: None` to text parts: nulls are left out)
    left = normalized(streamed.model_dump(exclude_none=True))
    right = normalized(whole.model_dump(exclude_none=True))
    assert left["output"] == right["output"], (left["output"], right["output"])
    assert left == right


async def test_a_function_tool_round_trip(scripted_app):
    app = await scripted_app([CALL, ANSWER])
    first = await app.openai.responses.create(model=app.model, input="What is the weather?",
                                              tools=[WEATHER])
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == \
        [("get_weather", {"city": "Paris"})]
    assert calls[0].call_id.startswith("call_") and first.status == "completed"
    history = [{"role": "user", "content": "What is the weather?"},
               {"type": "function_call", "call_id": calls[0].call_id,
                "name": "get_weather", "arguments": calls[0].arguments},
               {"type": "function_call_output", "call_id": calls[0].call_id,
                "output": "18 C and sunny"}]
    second = await app.openai.responses.create(model=app.model, input=history,
                                               tools=[WEATHER])
    assert second.output_text == "It is sunny in Paris."
    assert "18 C and sunny" in app.engine.received[-1].last_user


async def test_a_custom_tool_call_streams_its_free_text_input(scripted_app):
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    call = {"name": "apply_patch", "arguments": {"input": patch}}
    app = await scripted_app(Reply(f"<tool_call>\n{json.dumps(call)}\n</tool_call>"))
    tool = {"type": "custom", "name": "apply_patch", "description": "Edit files",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}
    events = await raw_events(app, input="add a.txt", tools=[tool])
    for event in events:
        validate(event)
    done = [e for e in events if e["type"] == "response.custom_tool_call_input.done"]
    assert [e["input"] for e in done] == [patch]
    item = events[-1]["response"]["output"][0]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch",
                                                           patch)


async def test_sealed_reasoning_comes_back_and_an_edited_seal_is_refused(scripted_app):
    app = await scripted_app(THINKING)
    first = await app.openai.responses.create(
        model=app.model, input="hi", reasoning={"effort": "low"},
        include=["reasoning.encrypted_content"])
    reasoning = first.output[0].model_dump(exclude_none=True)
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    replay = {k: v for k, v in reasoning.items() if k not in ("id", "status")}
    history = ["hi", replay, {"role": "assistant", "content": "Hello!"}, "again"]
    items = [{"role": "user", "content": h} if isinstance(h, str) else h for h in history]
    again = await app.openai.responses.create(model=app.model, input=items,
                                              reasoning={"effort": "low"})
    assert again.status == "completed"
    assert "The user greets me." in app.engine.received[-1].text
    forged = dict(replay, encrypted_content=replay["encrypted_content"][:-4] + "AAAA")
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, input=[items[0], forged, items[3]])
    assert info.value.code == "invalid_encrypted_content"
    assert info.value.param == "input[1].encrypted_content"


async def test_max_output_tokens_ends_the_response_incomplete(scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.responses.create(model=app.model, input="hi",
                                              max_output_tokens=2)
    assert whole.status == "incomplete"
    assert whole.incomplete_details is not None
    assert whole.incomplete_details.reason == "max_output_tokens"
    events = await raw_events(app, input="hi", max_output_tokens=2)
    assert events[-1]["type"] == "response.incomplete"
    assert [e["type"] for e in events].count("response.completed") == 0


async def test_a_prompt_past_the_window_fails_the_stream_with_context_length_exceeded(
        scripted_app):
    app = await scripted_app(Script(replies=(HELLO,), context_window=64))
    events = await raw_events(app, input="word " * 100)
    assert [e["type"] for e in events] == ["response.created", "response.in_progress",
                                           "response.failed"]
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "context_length_exceeded"
    # the code Codex acts on, which the SDK's enum of failure codes does not list: the
    # rest of the event is checked against the SDK's type
    validate({**events[-1], "response": {**failed, "error": {**failed["error"],
                                                             "code": "server_error"}}})


async def test_a_whole_response_past_the_window_is_a_400_context_length_exceeded(
        scripted_app):
    app = await scripted_app(Script(replies=(HELLO,), context_window=64))
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, input="word " * 100)
    assert (info.value.code, info.value.param) == ("context_length_exceeded", "input")


async def test_codex_shaped_requests_are_served(scripted_app):
    """What Codex 0.171 sends: developer messages, a namespace, web search, its metadata."""
    app = await scripted_app(HELLO)
    namespace = {"type": "namespace", "name": "agents", "description": "Sub-agents.",
                 "tools": [dict(WEATHER, name="spawn", strict=False)]}
    events = await raw_events(
        app, input=[{"type": "message", "role": "developer",
                     "content": [{"type": "input_text", "text": "You are Codex."}]},
                    {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "hi"}]}],
        tools=[dict(WEATHER, strict=False), namespace,
               {"type": "web_search", "external_web_access": False}],
        tool_choice="auto", parallel_tool_calls=True, reasoning={"summary": "auto"},
        store=False, include=["reasoning.encrypted_content"], prompt_cache_key="t1",
        client_metadata={"x-codex-turn-metadata": "{}"})
    assert events[-1]["type"] == "response.completed"
    prompt = app.engine.received[-1].text
    assert "You are Codex." in prompt and "agents.spawn" in prompt
    assert "web_search" not in prompt


@pytest.mark.parametrize("extra, param, code", [
    ({"tools": [{"type": "file_search", "vector_store_ids": ["v"]}]}, "tools[0].type",
     "unsupported_parameter"),
    ({"conversation": "conv_1"}, "conversation", "unsupported_parameter"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0].type", "unsupported_parameter"),
    ({"input": [{"type": "function_call_output", "call_id": "call_x", "output": "1"}]},
     "input[0]", "invalid_request"),
    ({"temperature": 3}, "temperature", "invalid_request"),
    ({"extra_body": {"bogus": 1}}, "bogus", "unsupported_parameter"),
])
async def test_bad_requests_are_openai_bad_request_errors_naming_the_field(
        scripted_app, extra, param, code):
    app = await scripted_app(HELLO)
    body = {"input": "hi", **extra}
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, **body)
    assert (info.value.status_code, info.value.param, info.value.code) == (400, param, code)


async def test_an_unknown_model_is_not_found(scripted_app):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.NotFoundError) as info:
        await app.openai.responses.create(model="gpt-5", input="hi")
    assert info.value.code == "model_not_available"


async def test_input_tokens_counts_what_the_same_request_reports_as_input(scripted_app):
    app = await scripted_app(HELLO)
    ask = {"model": app.model, "input": "Say hello", "instructions": "Be brief.",
           "tools": [WEATHER]}
    counted = await app.openai.responses.input_tokens.count(**ask)
    response = await app.openai.responses.create(**ask)
    assert counted.object == "response.input_tokens"
    assert response.usage is not None
    assert counted.input_tokens == response.usage.input_tokens > 0
