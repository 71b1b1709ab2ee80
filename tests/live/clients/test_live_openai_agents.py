"""The OpenAI Agents SDK (`openai-agents`) with its defaults: an ``Agent`` run by ``Runner``
on the Responses API (``OpenAIResponsesModel``) and on Chat Completions
(``OpenAIChatCompletionsModel``), each on an ``AsyncOpenAI`` client that names the server and
the key, the SDK's way to use a server of one's own. (A model named by a string that holds a
``/``, as ours do, is read by the SDK as ``provider/model``: ``b3os/scripted`` is refused with
"Unknown prefix: b3os".) Tracing is off: its traces go to OpenAI's own platform."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from openai.types.responses import ResponseTextDeltaEvent

from support.client_matrix import MATRIX

APIS = ["responses", "chat_completions"]


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return MATRIX.weather(city)


def run(served, api: str, flow: Callable[[Agent], Awaitable[Any]]) -> Any:
    """``flow`` on an agent with the model of ``api``, its client closed afterwards."""
    set_tracing_disabled(True)

    async def go() -> Any:
        async with AsyncOpenAI(base_url=served.base_url, api_key=served.key) as client:
            kind = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
            model = kind(model=served.model, openai_client=client)
            return await flow(Agent(name="matrix", instructions="You answer briefly.",
                                    model=model, tools=[get_weather]))

    return asyncio.run(go())


@pytest.mark.parametrize("api", APIS)
def test_agents_runner_returns_the_models_answer(served, api):
    async def flow(agent: Agent) -> Any:
        return (await Runner.run(agent, MATRIX.text_prompt)).final_output

    assert run(served, api, flow) == MATRIX.text_answer


@pytest.mark.parametrize("api", APIS)
def test_agents_streamed_run_sends_text_deltas_that_join_to_the_answer(served, api):
    async def flow(agent: Agent) -> tuple[list[str], Any]:
        result = Runner.run_streamed(agent, MATRIX.stream_prompt)
        deltas = [event.data.delta async for event in result.stream_events()
                  if event.type == "raw_response_event"
                  and isinstance(event.data, ResponseTextDeltaEvent)]
        return deltas, result.final_output

    deltas, final = run(served, api, flow)
    assert "".join(deltas) == final == MATRIX.stream_answer and len(deltas) > 1


@pytest.mark.parametrize("api", APIS)
def test_agents_runner_calls_the_function_tool_and_answers_from_its_result(served, api):
    async def flow(agent: Agent) -> Any:
        return await Runner.run(agent, MATRIX.tool_prompt)

    result = run(served, api, flow)
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == [MATRIX.weather("Paris")]
    assert result.final_output == MATRIX.tool_answer
