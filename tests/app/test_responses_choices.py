"""Responses in process: ``tool_choice: allowed_tools`` offers only the listed tools,
``reasoning.summary`` streams the reasoning as its own summary (events valid against the
SDK's types, the streamed response equal to the whole one), and limits refuse a
streamed request as the real API does: an HTTP 429 before any event."""

from __future__ import annotations

import json

import openai
import pytest
from test_responses_route import SDK_EVENTS, normalized, raw_events

from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.engine.scripted.script import Reply, When
from b3os_infer.errors import RateLimited
from b3os_infer.openai_api.responses.output import failure_of

pytestmark = pytest.mark.anyio

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
CLOCK = {"type": "function", "name": "get_time", "description": "The time of day"}
CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
             '</tool_call>', when=When(last_user_contains="weather"))
THINKING = Reply("<think>\nThe user greets me.\n</think>\n\nHello!", repeat=True)
HELLO = Reply("Hello from the script.", repeat=True)


def allowed(*tools: dict, mode: str = "auto") -> dict:
    return {"type": "allowed_tools", "mode": mode, "tools": list(tools)}


async def test_allowed_tools_offers_the_model_only_the_listed_tools(scripted_app):
    app = await scripted_app(CALL)
    response = await app.openai.responses.create(
        model=app.model, input="What is the weather in Paris?", tools=[WEATHER, CLOCK],
        tool_choice=allowed({"type": "function", "name": "get_weather"},
                            {"type": "web_search"}, mode="required"))
    prompt = app.engine.received[-1].text
    assert "get_weather" in prompt and "get_time" not in prompt
    call = response.output[-1]
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Paris"}
    assert response.tool_choice.type == "allowed_tools"
    assert response.tool_choice.mode == "required"


@pytest.mark.parametrize("entry, param, code", [
    ({"type": "function", "name": "get_date"}, "tool_choice.tools[0].name",
     "invalid_request"),
    ({"type": "custom", "name": "get_weather"}, "tool_choice.tools[0].name",
     "invalid_request"),
    ({"type": "mcp", "server_label": "wiki"}, "tool_choice.tools[0].type",
     "unsupported_parameter"),
])
async def test_allowed_tools_naming_what_is_not_in_tools_is_refused(
        scripted_app, entry, param, code):
    app = await scripted_app(HELLO)
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, input="hi", tools=[WEATHER],
                                          tool_choice=allowed(entry))
    assert (info.value.param, info.value.code) == (param, code)


async def test_a_reasoning_summary_is_the_reasoning_text_streamed_as_summary_events(
        scripted_app):
    app = await scripted_app(THINKING)
    ask = {"input": "hi", "reasoning": {"effort": "low", "summary": "auto"}}
    events = await raw_events(app, **ask)
    for event in events:
        SDK_EVENTS[event["type"]].model_validate(event)
    kinds = [e["type"] for e in events]
    summary_kinds = [k for k in kinds if "summary" in k]
    assert summary_kinds[0] == "response.reasoning_summary_part.added"
    assert summary_kinds[-2:] == ["response.reasoning_summary_text.done",
                                  "response.reasoning_summary_part.done"]
    deltas = "".join(e["delta"] for e in events
                     if e["type"] == "response.reasoning_summary_text.delta")
    reasoning = events[-1]["response"]["output"][0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text", "text": deltas}]
    assert reasoning["content"][0]["text"] == deltas
    assert "The user greets me." in deltas
    whole = await app.openai.responses.create(model=app.model, **ask)
    async with app.openai.responses.stream(model=app.model, **ask) as stream:
        streamed = await stream.get_final_response()
    assert normalized(streamed.model_dump(exclude_none=True)) == \
        normalized(whole.model_dump(exclude_none=True))


async def test_without_a_summary_asked_reasoning_has_no_summary_events(scripted_app):
    app = await scripted_app(THINKING)
    events = await raw_events(app, input="hi", reasoning={"effort": "low"})
    assert not [e for e in events if "summary" in e["type"]]
    assert events[-1]["response"]["output"][0]["summary"] == []


async def test_a_streamed_request_over_the_limit_is_an_http_429_before_any_event(
        scripted_app):
    app = await scripted_app(HELLO)
    assert app.edge is not None
    app.edge.limits = LimitsConfig(default={"requests_per_minute": 1})
    await app.openai.responses.create(model=app.model, input="hi")
    with pytest.raises(openai.RateLimitError) as info:
        async with app.openai.responses.stream(model=app.model, input="hi") as stream:
            async for _ in stream:
                pass
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"].isdigit()
    assert info.value.code == "rate_limited"


def test_a_rate_limit_failing_a_stream_says_when_to_try_again_as_codex_reads_it():
    failure = failure_of(RateLimited("rate limit reached", retry_after=6.2))
    assert failure.code == "rate_limit_exceeded"
    assert failure.message.endswith("Please try again in 7s.")
