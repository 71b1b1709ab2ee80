"""LangChain (`langchain-openai`'s ChatOpenAI, `langchain-anthropic`'s ChatAnthropic) with
their defaults: only the model, the base URL and the key are set."""

from __future__ import annotations

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from support.client_matrix import MATRIX

APIS = ["openai", "anthropic"]


def chat(served, api: str):
    if api == "openai":
        return ChatOpenAI(model=served.model, base_url=served.base_url, api_key=served.key)
    # model is the field's alias (model_name), which mypy's view of pydantic does not see
    return ChatAnthropic(model=served.model, base_url=served.base_url,  # type: ignore[call-arg]
                         api_key=served.key)


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return MATRIX.weather(city)


@pytest.mark.parametrize("api", APIS)
def test_langchain_invoke_returns_the_models_answer(served, api):
    assert chat(served, api).invoke(MATRIX.text_prompt).text == MATRIX.text_answer


@pytest.mark.parametrize("api", APIS)
def test_langchain_stream_arrives_in_chunks_that_join_to_the_answer(served, api):
    chunks = [chunk.text for chunk in chat(served, api).stream(MATRIX.stream_prompt)]
    assert "".join(chunks) == MATRIX.stream_answer
    assert len([c for c in chunks if c]) > 1


@pytest.mark.parametrize("api", APIS)
def test_langchain_bound_tool_is_called_and_its_result_answered(served, api):
    model = chat(served, api).bind_tools([get_weather])
    messages = [HumanMessage(MATRIX.tool_prompt)]
    called = model.invoke(messages)
    assert [(c["name"], c["args"]) for c in called.tool_calls] == \
        [("get_weather", {"city": "Paris"})]
    call = called.tool_calls[0]
    messages += [called, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    assert model.invoke(messages).text == MATRIX.tool_answer
