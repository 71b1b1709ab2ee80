"""pydantic-ai (`pydantic-ai-slim[openai,anthropic]`) with its defaults: an ``Agent`` on
``OpenAIChatModel`` (Chat Completions), ``OpenAIResponsesModel`` and ``AnthropicModel``, each
with a provider that names only the server and the key. Each flow runs in its own event loop
inside ``async with agent``, which closes the provider's HTTP client when the loop ends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from support.client_matrix import MATRIX

APIS = ["openai-chat", "openai-responses", "anthropic"]


def model(served, api: str) -> Model:
    if api == "anthropic":
        return AnthropicModel(served.model, provider=AnthropicProvider(
            base_url=served.base_url, api_key=served.key))
    provider = OpenAIProvider(base_url=served.base_url, api_key=served.key)
    kind = OpenAIChatModel if api == "openai-chat" else OpenAIResponsesModel
    return kind(served.model, provider=provider)


def run(served, api: str, flow: Callable[[Agent], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        agent = Agent(model(served, api))

        @agent.tool_plain
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            return MATRIX.weather(city)

        async with agent:
            return await flow(agent)

    return asyncio.run(go())


@pytest.mark.parametrize("api", APIS)
def test_pydantic_ai_run_returns_the_models_answer(served, api):
    async def flow(agent: Agent) -> Any:
        return (await agent.run(MATRIX.text_prompt)).output

    assert run(served, api, flow) == MATRIX.text_answer


@pytest.mark.parametrize("api", APIS)
def test_pydantic_ai_run_stream_sends_deltas_that_join_to_the_answer(served, api):
    async def flow(agent: Agent) -> list[str]:
        async with agent.run_stream(MATRIX.stream_prompt) as result:
            # each delta as it comes (by default they are grouped every 0.1 s)
            return [delta async for delta in result.stream_text(delta=True, debounce_by=None)]

    deltas = run(served, api, flow)
    assert "".join(deltas) == MATRIX.stream_answer and len(deltas) > 1


@pytest.mark.parametrize("api", APIS)
def test_pydantic_ai_calls_the_tool_and_answers_from_its_result(served, api):
    async def flow(agent: Agent) -> Any:
        return await agent.run(MATRIX.tool_prompt)

    result = run(served, api, flow)
    returns = [part.content for message in result.all_messages() for part in message.parts
               if part.part_kind == "tool-return"]
    assert returns == [MATRIX.weather("Paris")]
    assert result.output == MATRIX.tool_answer
