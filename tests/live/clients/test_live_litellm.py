"""LiteLLM (`litellm`) with its defaults, through both of its providers: ``openai/<model>``
(Chat Completions) and ``anthropic/<model>`` (Messages), each given only ``api_base`` and
``api_key``. LiteLLM reads its model price list from the package (LITELLM_LOCAL_MODEL_COST_MAP)
instead of fetching it from GitHub at import: these tests reach no network."""

from __future__ import annotations

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402

from support.client_matrix import MATRIX, TOOL, TOOL_DESCRIPTION  # noqa: E402

# litellm builds a pydantic model from one of its own TypedDicts at run time, and pydantic
# warns about it; the warning says nothing of what the server sent
pytestmark = [pytest.mark.filterwarnings("ignore:.*`ReadOnly` qualifier:UserWarning"),
              pytest.mark.usefixtures("client_garbage")]

PROVIDERS = ["openai", "anthropic"]
WEATHER = {"type": "function", "function": {
    "name": TOOL, "description": TOOL_DESCRIPTION,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def complete(served, provider: str, messages: list, **options):
    return litellm.completion(model=f"{provider}/{served.model}", messages=messages,
                              api_base=served.base_url, api_key=served.key, **options)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_litellm_completion_returns_the_models_answer(served, provider):
    response = complete(served, provider, user(MATRIX.text_prompt))
    assert response.choices[0].message.content == MATRIX.text_answer


@pytest.mark.parametrize("provider", PROVIDERS)
def test_litellm_stream_arrives_in_chunks_that_join_to_the_answer(served, provider):
    chunks = [chunk.choices[0].delta.content or "" for chunk in
              complete(served, provider, user(MATRIX.stream_prompt), stream=True)]
    assert "".join(chunks) == MATRIX.stream_answer
    assert len([c for c in chunks if c]) > 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_litellm_tool_call_is_answered_from_the_tool_result(served, provider):
    messages = user(MATRIX.tool_prompt)
    called = complete(served, provider, messages, tools=[WEATHER]).choices[0].message
    [call] = called.tool_calls
    arguments = json.loads(call.function.arguments)
    assert (call.function.name, arguments) == (TOOL, {"city": "Paris"})
    messages += [called.model_dump(), {"role": "tool", "tool_call_id": call.id,
                                       "content": MATRIX.weather(arguments["city"])}]
    answer = complete(served, provider, messages, tools=[WEATHER]).choices[0].message
    assert answer.content == MATRIX.tool_answer
