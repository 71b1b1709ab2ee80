"""Tools, structured output, logprobs, choices, reasoning and legacy completions through
the official OpenAI Python SDK against the live server."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest
from pydantic import BaseModel

MODEL = "b3os/smollm2-135m-instruct"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string",
                                                              "maxLength": 30}},
                   "required": ["zone"]}}}
THE = 504  # "The" in SmolLM2's vocabulary
ASK = [{"role": "user", "content": "What is the weather in Paris, in celsius?"}]


@pytest.fixture
def client(openai_client):
    return openai_client


def test_required_tool_call_is_valid_against_the_schema(client):
    completion = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
        parallel_tool_calls=False, max_tokens=80, temperature=0)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id
    tools = {tool["function"]["name"]: tool["function"] for tool in (WEATHER, TIME)}
    assert call.function.name in tools
    # types, required keys, the enum, maxLength and no extra keys, as the schema states them
    jsonschema.validate(json.loads(call.function.arguments),
                        tools[call.function.name]["parameters"])


def test_streamed_tool_call_deltas_accumulate_to_the_non_streamed_call(client):
    kwargs = dict(model=MODEL, messages=ASK, tools=[WEATHER, TIME], max_tokens=80,
                  temperature=0, tool_choice={"type": "function",
                                              "function": {"name": "get_weather"}},
                  parallel_tool_calls=False)
    client.chat.completions.create(**kwargs)  # warm the prompt cache for both runs
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(stream=True, **kwargs))
    entries = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert all(e.index == 0 for e in entries)
    assert entries[0].id and entries[0].function.name == "get_weather"
    assert all(e.id is None and e.function.name is None for e in entries[1:])
    streamed = "".join(e.function.arguments or "" for e in entries)
    call = whole.choices[0].message.tool_calls[0]
    assert len(whole.choices[0].message.tool_calls) == 1
    assert json.loads(streamed) == json.loads(call.function.arguments)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    with client.chat.completions.stream(**kwargs) as stream:
        final = stream.get_final_completion()
    accumulated = final.choices[0].message.tool_calls[0]
    assert accumulated.function.name == "get_weather"
    assert json.loads(accumulated.function.arguments) == json.loads(call.function.arguments)


def test_a_tool_round_trip_is_answered_in_text(client):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris", '
                                                             '"unit": "celsius"}'}}
    messages = ASK + [{"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"}]
    completion = client.chat.completions.create(model=MODEL, messages=messages,
                                                tools=[WEATHER], tool_choice="none",
                                                max_tokens=30)
    assert completion.choices[0].message.content
    assert completion.choices[0].message.tool_calls is None


def test_unanswered_tool_calls_are_a_bad_request(client):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{}"}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model=MODEL, max_tokens=5, tools=[WEATHER],
            messages=ASK + [{"role": "assistant", "tool_calls": [call]},
                            {"role": "user", "content": "and?"}])
    assert "call_1" in info.value.message


class City(BaseModel):
    name: str
    country: str
    population: int


def test_json_schema_output_parses_with_the_sdk(client):
    completion = client.chat.completions.parse(
        model=MODEL, max_tokens=80, temperature=0, response_format=City,
        messages=[{"role": "user", "content": "Describe Paris as JSON."}])
    city = completion.choices[0].message.parsed
    assert isinstance(city, City)


def test_json_object_output_is_an_object(client):
    completion = client.chat.completions.create(
        model=MODEL, max_tokens=60, temperature=0, response_format={"type": "json_object"},
        messages=[{"role": "user", "content": "Give me a JSON object about a cat."}])
    if completion.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(completion.choices[0].message.content), dict)
    else:  # cut by max_tokens: still the start of an object
        assert completion.choices[0].message.content.lstrip().startswith("{")


def test_logprobs_cover_the_reply_text_in_both_forms(client):
    kwargs = dict(model=MODEL, messages=ASK, max_tokens=12, temperature=0, logprobs=True,
                  top_logprobs=2)
    client.chat.completions.create(**kwargs)
    whole = client.chat.completions.create(**kwargs)
    entries = whole.choices[0].logprobs.content
    assert "".join(e.token for e in entries) == whole.choices[0].message.content
    assert all(e.logprob <= 0 and len(e.top_logprobs) == 2 for e in entries)
    assert all(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob for e in entries)
    assert all(bytes(e.bytes).decode() == e.token for e in entries if e.token.isascii())
    chunks = list(client.chat.completions.create(stream=True, **kwargs))
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                for e in c.choices[0].logprobs.content]
    assert [e.token for e in streamed] == [e.token for e in entries]


def test_n_choices_with_a_seed_are_reproducible(client):
    kwargs = dict(model=MODEL, messages=ASK, max_tokens=10, n=3, seed=7, temperature=1.0)
    first = client.chat.completions.create(**kwargs)
    again = client.chat.completions.create(**kwargs)
    assert [c.index for c in first.choices] == [0, 1, 2]
    assert [c.message.content for c in first.choices] == \
        [c.message.content for c in again.choices]
    assert first.usage.completion_tokens <= 3 * 10
    chunks = list(client.chat.completions.create(stream=True, **kwargs))
    texts = {i: "" for i in range(3)}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
    assert [texts[i] for i in range(3)] == [c.message.content for c in first.choices]


def test_logit_bias_uses_the_models_token_ids(client):
    the = client.completions.create(model=MODEL, prompt=[THE], max_tokens=1, echo=True)
    assert the.choices[0].text.startswith("The")
    forced = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=3,
        temperature=0, logprobs=True, logit_bias={str(THE): 100})
    assert forced.choices[0].logprobs.content[0].token == "The"
    banned = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Name a colour."}], max_tokens=6,
        temperature=0, logprobs=True, logit_bias={str(THE): -100})
    assert all(e.token != "The" for e in banned.choices[0].logprobs.content)


def test_reasoning_effort_returns_reasoning_in_both_spellings(client):
    completion = client.chat.completions.create(
        model=MODEL, messages=ASK, max_tokens=120, reasoning_effort="low", temperature=0)
    message = completion.choices[0].message.model_dump()
    assert message["reasoning_content"] and message["reasoning"] == message["reasoning_content"]
    again = client.chat.completions.create(
        model=MODEL, max_tokens=10, messages=ASK + [
            {"role": "assistant", "content": message["content"] or "ok",
             "reasoning_content": message["reasoning_content"]},
            {"role": "user", "content": "Thanks."}])
    assert again.choices[0].finish_reason in ("stop", "length")


def test_legacy_completions_for_text_lists_and_token_ids(client):
    one = client.completions.create(model=MODEL, prompt="The capital of France is",
                                    max_tokens=5, temperature=0)
    assert one.object == "text_completion" and one.choices[0].text
    assert one.choices[0].finish_reason in ("stop", "length")
    many = client.completions.create(model=MODEL, prompt=["One, two,", "Red, green,"],
                                     max_tokens=4, n=2, temperature=0)
    assert [c.index for c in many.choices] == [0, 1, 2, 3]
    assert many.choices[0].text == many.choices[1].text  # greedy: both choices agree
    tokens = client.completions.create(model=MODEL, prompt=[504, 3575], max_tokens=3,
                                       temperature=0, logprobs=2)
    logprobs = tokens.choices[0].logprobs
    assert "".join(logprobs.tokens) == tokens.choices[0].text
    assert len(logprobs.token_logprobs) == len(logprobs.tokens) == len(logprobs.text_offset)
    assert all(len(top) == 2 for top in logprobs.top_logprobs)
    streamed = list(client.completions.create(model=MODEL, prompt="The capital of France is",
                                              max_tokens=5, temperature=0, stream=True,
                                              stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in streamed if c.choices) == one.choices[0].text
    assert streamed[-1].usage.completion_tokens == one.usage.completion_tokens


@pytest.mark.parametrize("extra, param", [
    ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ({"functions": [{"name": "f"}]}, "functions"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]},
     "messages[0].content[0]"),
    ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0].type"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"response_format": {"type": "xml"}}, "response_format.type"),
    ({"logit_bias": {"999999": 5}}, "logit_bias"),
])
def test_refusals_name_the_field(client, extra, param):
    body = {"model": MODEL, "messages": ASK, "max_tokens": 5, **extra}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**body)
    assert info.value.param == param
    assert info.value.status_code == 400


def test_legacy_refusals(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt="x", suffix="y")
    assert info.value.param == "suffix" and info.value.code == "unsupported_parameter"
