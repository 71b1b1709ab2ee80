"""Unit tests of OpenAI request decoding and chunk encoding."""

import json

import pytest

from b3os_infer.core import (
    ChatResult,
    Finished,
    Started,
    TextDelta,
    TextPart,
    ThinkingPart,
    ToolCallDelta,
    ToolCallPart,
    ToolCallStart,
    Usage,
)
from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.node.choices import AllFinished, ChoiceEvent
from b3os_infer.openai_api.decode import decode_chat_request
from b3os_infer.openai_api.encode import ChunkEncoder, completion_body

BASE = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}


def test_system_and_developer_lead_become_the_system_prompt():
    request, _ = decode_chat_request({**BASE, "messages": [
        {"role": "system", "content": "a"}, {"role": "developer", "content": "b"},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]})
    assert request.system == "a\n\nb"
    assert [m.role for m in request.messages] == ["user"]


def test_max_completion_tokens_wins_over_max_tokens():
    request, _ = decode_chat_request({**BASE, "max_tokens": 5, "max_completion_tokens": 7})
    assert request.max_tokens == 7


def test_stop_string_or_list():
    assert decode_chat_request({**BASE, "stop": "x"})[0].stop == ["x"]
    assert decode_chat_request({**BASE, "stop": ["x", "y"]})[0].stop == ["x", "y"]
    with pytest.raises(InvalidRequest):
        decode_chat_request({**BASE, "stop": ["a", "b", "c", "d", "e"]})


def test_stream_options():
    _, options = decode_chat_request({**BASE, "stream": True,
                                      "stream_options": {"include_usage": True}})
    assert options.stream and options.include_usage


def test_n_is_bounded_and_unknown_fields_are_refused():
    assert decode_chat_request({**BASE, "n": 3})[1].n == 3
    with pytest.raises(InvalidRequest) as bad:
        decode_chat_request({**BASE, "n": 9})
    assert bad.value.param == "n"
    with pytest.raises(UnsupportedParameter) as info:
        decode_chat_request({**BASE, "bogus": 1})
    assert info.value.param == "bogus"


def test_temperature_range_is_openais():
    assert decode_chat_request({**BASE, "temperature": 2})[0].sampling.temperature == 2
    with pytest.raises(InvalidRequest):
        decode_chat_request({**BASE, "temperature": 2.5})


def chunks_of(frames):
    payloads = [f.decode().removeprefix("data: ").strip() for f in frames]
    return [p if p == "[DONE]" else json.loads(p) for p in payloads]


def test_chunks_role_first_usage_last_done_at_the_end():
    encoder = ChunkEncoder("id", 1, "m", include_usage=True, logprobs=False)
    frames = []
    for event in [Started(Usage(4)), TextDelta("a"), TextDelta("b"),
                  Finished("length", None, Usage(4, 2))]:
        frames += encoder.encode(ChoiceEvent(0, event))
    frames += encoder.encode(AllFinished(Usage(4, 2)))
    chunks = chunks_of(frames)
    assert chunks[-1] == "[DONE]"
    usage_chunk = chunks[-2]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["total_tokens"] == 6
    content = chunks[:-2]
    roles = [c["choices"][0]["delta"].get("role") for c in content]
    assert roles[0] == "assistant" and not any(roles[1:])
    assert all(c["usage"] is None for c in content)
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in content) == "ab"


def test_a_completion_is_serialised_with_only_the_fields_it_was_given():
    results = [ChatResult([ThinkingPart("hm"), TextPart("a")], "end", None, Usage(3, 1)),
               ChatResult([ToolCallPart("x1", "f", {"a": 1})], "tool_calls", None,
                          Usage(3, 2))]
    body = json.loads(completion_body("id", 1, "m", results, Usage(3, 3, 2), False).to_json())
    first, second = (c["message"] for c in body["choices"])
    assert first == {"role": "assistant", "content": "a", "refusal": None,
                     "reasoning_content": "hm", "reasoning": "hm"}
    assert second["content"] is None and "reasoning" not in second
    assert second["tool_calls"] == [{"id": "call_x1", "type": "function", "function": {
        "name": "f", "arguments": '{"a": 1}'}}]
    assert [c["finish_reason"] for c in body["choices"]] == ["stop", "tool_calls"]
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                             "prompt_tokens_details": {"cached_tokens": 2},
                             "completion_tokens_details": {"reasoning_tokens": 0}}
    assert body["object"] == "chat.completion" and body["system_fingerprint"] is None


def test_chunk_deltas_carry_only_what_changed():
    encoder = ChunkEncoder("id", 1, "m", include_usage=False, logprobs=False)
    frames = []
    for event in [Started(Usage(4)), ToolCallStart("x", "f"), ToolCallDelta('{"a":'),
                  ToolCallDelta("1}")]:
        frames += encoder.encode(ChoiceEvent(0, event))
    deltas = [c["choices"][0]["delta"] for c in chunks_of(frames)]
    assert deltas == [
        {"role": "assistant", "content": "", "refusal": None},
        {"tool_calls": [{"index": 0, "id": "call_x", "type": "function",
                         "function": {"name": "f", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}]
    assert all("usage" not in c for c in chunks_of(frames))
