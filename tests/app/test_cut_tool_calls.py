"""Tool calls the reply could not finish, through the real app and the official SDKs.

A call the token limit cuts is never a call with empty input: a stream shows the fragments
of its arguments that were written and stops for length; a whole reply holds no call and
stops for length. Arguments the model closed but that are not a JSON object are an error
the client sees.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

# seven tokens: "<tool_call>", "\n{"name":", " "get_weather",", " "arguments":",
# " {"city":", " "Paris"}}", "\n</tool_call>"; five cut the call inside its arguments
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
CUT_AT = 5
FRAGMENT = '{"city":'
MALFORMED = CALL.replace('"Paris"', "Paris")
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ANTHROPIC_TOOL = {"name": "get_weather", "description": "The weather", "input_schema": SCHEMA}
OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "parameters": SCHEMA}


async def test_a_message_cut_inside_a_call_holds_no_tool_use_and_stops_at_max_tokens(
        scripted_app):
    app = await scripted_app(Reply(CALL, repeat=True))
    message = await app.anthropic.messages.create(
        model=app.model, max_tokens=CUT_AT, messages=USER, tools=[ANTHROPIC_TOOL])
    assert message.stop_reason == "max_tokens"
    assert [block.type for block in message.content] == []


async def test_a_message_stream_cut_inside_a_call_sends_the_fragments_and_max_tokens(
        scripted_app):
    app = await scripted_app(Reply(CALL, repeat=True))
    events = [event async for event in await app.anthropic.messages.create(
        model=app.model, max_tokens=CUT_AT, messages=USER, tools=[ANTHROPIC_TOOL],
        stream=True)]
    starts = [e.content_block for e in events if e.type == "content_block_start"]
    fragments = "".join(e.delta.partial_json for e in events
                        if e.type == "content_block_delta")
    (delta,) = [e.delta for e in events if e.type == "message_delta"]
    assert [(b.type, b.name, b.input) for b in starts] == [("tool_use", "get_weather", {})]
    assert fragments.strip() == FRAGMENT
    assert delta.stop_reason == "max_tokens"
    assert [e.type for e in events][-3:] == ["content_block_stop", "message_delta",
                                             "message_stop"]


async def test_a_chat_completion_cut_inside_a_call_has_no_tool_calls_and_stops_for_length(
        scripted_app):
    app = await scripted_app(Reply(CALL, repeat=True))
    completion = await app.openai.chat.completions.create(
        model=app.model, messages=USER, tools=[OPENAI_TOOL], max_tokens=CUT_AT)
    (choice,) = completion.choices
    assert choice.finish_reason == "length"
    assert not choice.message.tool_calls


async def test_a_chat_completion_stream_cut_inside_a_call_sends_the_fragments_and_length(
        scripted_app):
    app = await scripted_app(Reply(CALL, repeat=True))
    chunks = [c async for c in await app.openai.chat.completions.create(
        model=app.model, messages=USER, tools=[OPENAI_TOOL], max_tokens=CUT_AT, stream=True)]
    calls = [call for c in chunks for call in c.choices[0].delta.tool_calls or []]
    assert [call.function.name for call in calls if call.function.name] == ["get_weather"]
    assert "".join(call.function.arguments or "" for call in calls).strip() == FRAGMENT
    assert [c.choices[0].finish_reason for c in chunks][-1] == "length"


async def test_a_response_cut_inside_a_call_is_incomplete_with_an_incomplete_call_item(
        scripted_app):
    app = await scripted_app(Reply(CALL, repeat=True))
    response = await app.openai.responses.create(
        model=app.model, input="What is the weather in Paris?", tools=[RESPONSES_TOOL],
        max_output_tokens=CUT_AT)
    (item,) = response.output
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert (item.type, item.name, item.status) == ("function_call", "get_weather",
                                                   "incomplete")
    assert item.arguments.strip() == FRAGMENT


async def test_malformed_arguments_are_an_api_error_naming_the_tool_whole_and_streamed(
        scripted_app):
    app = await scripted_app(Reply(MALFORMED, repeat=True))
    with pytest.raises(anthropic.APIStatusError) as whole:
        await app.anthropic.messages.create(model=app.model, max_tokens=100, messages=USER,
                                            tools=[ANTHROPIC_TOOL])
    with pytest.raises(anthropic.APIStatusError) as streamed:
        async with app.anthropic.messages.stream(model=app.model, max_tokens=100,
                                                 messages=USER,
                                                 tools=[ANTHROPIC_TOOL]) as stream:
            async for _ in stream:
                pass
    assert whole.value.status_code == 500
    for error in (whole.value, streamed.value):
        assert error.body["error"]["type"] == "api_error"
        assert "'get_weather' whose arguments are not valid JSON" in \
            error.body["error"]["message"]


async def test_malformed_arguments_are_a_server_error_on_chat_completions(scripted_app):
    app = await scripted_app(Reply(MALFORMED, repeat=True))
    with pytest.raises(openai.InternalServerError) as whole:
        await app.openai.chat.completions.create(model=app.model, messages=USER,
                                                 tools=[OPENAI_TOOL])
    with pytest.raises(openai.APIError) as streamed:
        async for _ in await app.openai.chat.completions.create(
                model=app.model, messages=USER, tools=[OPENAI_TOOL], stream=True):
            pass
    assert whole.value.status_code == 500
    assert "'get_weather' whose arguments are not valid JSON" in whole.value.message
    assert "'get_weather' whose arguments are not valid JSON" in streamed.value.message


async def test_a_server_tool_call_cut_inside_its_arguments_is_never_run(scripted_app):
    search = ('<tool_call>\n{"name": "web_search", "arguments": {"query": "b3os news"}}\n'
              '</tool_call>')
    app = await scripted_app(Reply(search, repeat=True))
    for stream in (False, True):
        kwargs = {"model": app.model, "max_tokens": CUT_AT, "messages": USER,
                  "tools": [{"type": "web_search_20250305", "name": "web_search"}]}
        if stream:
            async with app.anthropic.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await app.anthropic.messages.create(**kwargs)
        assert message.stop_reason == "max_tokens"
        assert message.content == []
        assert message.usage.server_tool_use is None
