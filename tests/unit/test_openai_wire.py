"""Unit tests of OpenAI request decoding and chunk encoding."""

import json

import pytest

from b3os_infer.core import Finished, Started, TextDelta, Usage
from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.node.choices import AllFinished, ChoiceEvent
from b3os_infer.openai_api.decode import decode_chat_request
from b3os_infer.openai_api.encode import ChunkEncoder

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
