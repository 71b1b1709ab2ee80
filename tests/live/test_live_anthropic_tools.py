"""Tools and thinking through the official Anthropic SDK and raw SSE, on the live server."""

from __future__ import annotations

import json

import anthropic
import httpx
import jsonschema
import pytest

from support.streams import check_message_stream, parse_sse

MODEL = "b3os/smollm2-135m-instruct"
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {
               "city": {"type": "string"},
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
               "days": {"type": "integer", "minimum": 1, "maximum": 7}},
               "required": ["city", "unit"]}}
TIME = {"name": "get_time", "description": "Current time in a timezone",
        "input_schema": {"type": "object", "properties": {"tz": {"type": "string"}},
                         "required": ["tz"]}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
GREEDY = {"top_k": 1}


@pytest.fixture
def client(anthropic_client):
    return anthropic_client


def raw_stream(live, body) -> dict:
    with httpx.stream("POST", live.base_url + "/v1/messages?beta=true",
                      json={**body, "stream": True}, timeout=120,
                      headers={"authorization": f"Bearer {live.key}",
                               "anthropic-version": "2023-06-01"}) as response:
        assert response.status_code == 200, response.read()
        return check_message_stream(parse_sse(response.read().decode()))


def test_forced_tool_use_is_valid_and_stream_equals_non_stream(live, client):
    kwargs = dict(model=MODEL, max_tokens=200, messages=ASK, tools=[WEATHER, TIME],
                  tool_choice={"type": "any", "disable_parallel_tool_use": True},
                  extra_body=GREEDY)
    client.messages.create(**kwargs)  # compared calls both reuse the cached prompt
    message = client.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    calls = [b for b in message.content if b.type == "tool_use"]
    assert calls and all(c.id.startswith("toolu_") for c in calls)
    for call in calls:
        schema = {WEATHER["name"]: WEATHER, TIME["name"]: TIME}[call.name]["input_schema"]
        jsonschema.validate(call.input, schema)
    with client.messages.stream(**kwargs) as stream:
        streamed = stream.get_final_message()
    assert [(b.type, b.name, b.input) for b in streamed.content if b.type == "tool_use"] == \
        [(c.type, c.name, c.input) for c in calls]
    folded = raw_stream(live, {**kwargs.pop("extra_body"), **kwargs})
    assert [b["input"] for b in folded["content"] if b["type"] == "tool_use"] == \
        [c.input for c in calls]
    assert folded["stop_reason"] == "tool_use"


def test_named_tool_and_no_parallel_calls(client):
    message = client.messages.create(
        model=MODEL, max_tokens=120, messages=ASK, tools=[WEATHER, TIME],
        tool_choice={"type": "tool", "name": "get_time", "disable_parallel_tool_use": True},
        extra_body=GREEDY)  # sampled, a string without maxLength can outrun max_tokens
    assert message.stop_reason == "tool_use"
    calls = [b for b in message.content if b.type == "tool_use"]
    assert len(calls) == 1 and calls[0].name == "get_time"
    jsonschema.validate(calls[0].input, TIME["input_schema"])


def test_a_tool_result_turn_is_answered_and_reads_the_calls_prefix_from_the_cache(client):
    first = client.messages.create(model=MODEL, max_tokens=120, messages=ASK, tools=[WEATHER],
                                   tool_choice={"type": "any",
                                                "disable_parallel_tool_use": True},
                                   extra_body=GREEDY)
    (call,) = [b for b in first.content if b.type == "tool_use"]
    follow = client.messages.create(
        model=MODEL, max_tokens=40, tools=[WEATHER],
        messages=[*ASK, {"role": "assistant", "content": first.content},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                "content": "18 degrees and sunny"}]}])
    assert follow.stop_reason in ("end_turn", "max_tokens", "tool_use")
    def total(usage):
        return usage.input_tokens + usage.cache_read_input_tokens

    assert total(follow.usage) > total(first.usage)
    assert follow.usage.cache_read_input_tokens > 0, "the shared prefix came from the cache"


def test_tool_choice_none_answers_in_text_only_and_auto_is_accepted(client):
    for choice in ({"type": "none"}, {"type": "auto"}):
        message = client.messages.create(model=MODEL, max_tokens=30, messages=ASK,
                                         tools=[WEATHER], tool_choice=choice)
        assert message.stop_reason in ("end_turn", "max_tokens", "tool_use")
        if choice["type"] == "none":
            assert all(b.type == "text" for b in message.content)


def test_count_tokens_counts_tools_and_thinking(live, client):
    plain = client.messages.count_tokens(model=MODEL, messages=ASK).input_tokens
    with_tools = client.messages.count_tokens(model=MODEL, messages=ASK, tools=[WEATHER])
    assert with_tools.input_tokens > plain
    thinking = {"type": "enabled", "budget_tokens": 1024}
    counted = client.messages.count_tokens(model=MODEL, messages=ASK, tools=[WEATHER],
                                           thinking=thinking).input_tokens
    assert counted > with_tools.input_tokens, "the opened reasoning section is counted"
    body = {"model": MODEL, "max_tokens": 1030, "messages": ASK, "tools": [WEATHER],
            "thinking": thinking, "stream": True}
    with httpx.stream("POST", live.base_url + "/v1/messages", json=body, timeout=120,
                      headers={"x-api-key": live.key}) as response:
        lines = response.iter_lines()
        first = next(lines, "")
        start = next(lines)  # the usage is known once the prompt is seated
    assert first == "event: message_start"
    usage = json.loads(start.removeprefix("data: "))["message"]["usage"]
    assert counted == usage["input_tokens"] + usage["cache_read_input_tokens"]


BUDGET = 1024
CLOSE_MARKER_TOKENS = 8   # generous: the profile's "</think>" close, with its newlines


def tokens_in(client, text: str) -> int:
    """``text``'s length in the model's tokens, by count_tokens: a user message holding it,
    less the same message holding the one-token "A"."""
    def count(content: str) -> int:
        return client.messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": content}]).input_tokens
    return count(text) - count("A") + 1


def assert_thinking_within_budget(client, blocks: list[dict], output_tokens: int) -> None:
    assert [b["type"] for b in blocks][:1] == ["thinking"] and blocks[0]["signature"]
    thinking = tokens_in(client, blocks[0]["thinking"])
    text = sum(tokens_in(client, b["text"]) for b in blocks[1:] if b["type"] == "text")
    assert output_tokens > BUDGET, "the model thought past the budget: it had to be cut"
    assert thinking <= BUDGET, f"{thinking} thinking tokens for a budget of {BUDGET}"
    assert output_tokens - text <= BUDGET + CLOSE_MARKER_TOKENS, \
        "what came before the answer is the budget's thinking and the close marker"
    assert [b["type"] for b in blocks] == ["thinking", "text"], "the answer follows the cut"


# a task whose thinking runs long on any numerics: the prompt already repeats one word, and a
# greedy small model that has started to repeat goes on repeating (a counting task, chosen for
# this once, ended its thinking after 17 tokens on another CPU's kernels)
LONG_TASK = [{"role": "user",
              "content": "Repeat the word hello 3000 times: " + "hello " * 60}]


def test_thinking_budget_is_honoured_and_blocks_come_first(live, client):
    # room for 400 tokens past the budget: an unbounded thinking would take them all
    kwargs = dict(model=MODEL, max_tokens=BUDGET + 400, messages=LONG_TASK, extra_body=GREEDY,
                  thinking={"type": "enabled", "budget_tokens": BUDGET})
    message = client.messages.create(**kwargs)
    assert_thinking_within_budget(client, [b.model_dump() for b in message.content],
                                  message.usage.output_tokens)
    folded = raw_stream(live, {**kwargs.pop("extra_body"), **kwargs})
    assert_thinking_within_budget(client, folded["content"], folded["usage"]["output_tokens"])


def test_thinking_round_trip_and_tampering(client):
    first = client.messages.create(model=MODEL, max_tokens=120, messages=ASK,
                                   thinking={"type": "adaptive"},
                                   output_config={"effort": "low"})
    block = first.content[0]
    assert block.type == "thinking"
    back = [{"type": "thinking", "thinking": block.thinking, "signature": block.signature},
            {"type": "text", "text": "It is sunny."}]
    follow = [*ASK, {"role": "assistant", "content": back},
              {"role": "user", "content": "And tomorrow?"}]
    assert client.messages.count_tokens(model=MODEL, messages=follow).input_tokens > 0
    edited = [{**back[0], "thinking": block.thinking + " (edited)"}, back[1]]
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.count_tokens(model=MODEL, messages=[
            *ASK, {"role": "assistant", "content": edited}, {"role": "user", "content": "?"}])
    assert info.value.body["b3os"] == {"code": "invalid_signature",
                                       "param": "messages[1].content[0]"}


def test_adaptive_thinking_with_omitted_display(client):
    message = client.messages.create(model=MODEL, max_tokens=160, messages=ASK,
                                     thinking={"type": "adaptive", "display": "omitted"},
                                     output_config={"effort": "low"})
    block = message.content[0]
    assert block.type == "thinking" and block.thinking == "" and block.signature
    back = [*ASK, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "", "signature": block.signature},
        {"type": "text", "text": "Sunny."}]}, {"role": "user", "content": "Thanks"}]
    assert client.messages.count_tokens(model=MODEL, messages=back).input_tokens > 0


def test_prompt_too_long_uses_the_wording_claude_code_keys_on(client):
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model=MODEL, max_tokens=10, messages=[
            {"role": "user", "content": "word " * 40000}])
    assert info.value.body["error"]["message"].startswith("prompt is too long: ")
    assert "tokens >" in info.value.body["error"]["message"]


def test_shared_prefix_is_read_from_cache_and_excluded_from_input(client):
    system = "You answer questions about rivers. " * 40
    first = client.messages.create(model=MODEL, max_tokens=5, system=system, messages=ASK)
    second = client.messages.create(
        model=MODEL, max_tokens=5, system=system,
        messages=[{"role": "user", "content": "What is the longest river in Oregon?"}])
    counted = client.messages.count_tokens(
        model=MODEL, system=system,
        messages=[{"role": "user", "content": "What is the longest river in Oregon?"}])
    assert first.usage.input_tokens > 200
    assert second.usage.cache_read_input_tokens > 200
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens == \
        counted.input_tokens


CITY = {"type": "object", "additionalProperties": False, "required": ["name", "population"],
        "properties": {"name": {"type": "string", "maxLength": 40},
                       "population": {"type": "integer", "minimum": 0}}}


def test_output_config_format_constrains_the_reply_streamed_and_not(client, live):
    extra = {"top_k": 1, "output_config": {"format": {"type": "json_schema", "schema": CITY}}}
    kwargs = dict(model=MODEL, max_tokens=80,
                  messages=[{"role": "user", "content": "Describe Paris as JSON."}])
    client.messages.create(**kwargs, extra_body=extra)  # warm the cache for both runs
    whole = client.messages.create(**kwargs, extra_body=extra)
    assert whole.stop_reason == "end_turn"
    value = json.loads(whole.content[0].text)
    jsonschema.validate(value, CITY)
    streamed = raw_stream(live, {**kwargs, **extra})
    assert streamed["content"][0]["text"] == whole.content[0].text
