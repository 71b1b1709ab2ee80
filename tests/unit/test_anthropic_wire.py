"""Unit tests of Anthropic request decoding and stream encoding."""

import json

import pytest

from b3os_infer.anthropic.decode import decode_count_tokens_request, decode_messages_request
from b3os_infer.anthropic.encode import MessageStreamEncoder, message_of
from b3os_infer.core import ChatResult, Finished, Started, TextDelta, Usage
from b3os_infer.errors import InvalidRequest, UnsupportedParameter

BASE = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}


def decode(**changes):
    return decode_messages_request({**BASE, **changes})


def test_minimal_request():
    request, stream = decode()
    assert (request.model, request.max_tokens, stream) == ("m", 16, False)
    assert request.messages[0].role == "user" and request.messages[0].text == "Hi"


def test_system_blocks_and_sampling():
    request, stream = decode(system=[{"type": "text", "text": "a"},
                                     {"type": "text", "text": "b",
                                      "cache_control": {"type": "ephemeral"}}],
                             temperature=0.2, top_p=0.9, top_k=5, stream=True,
                             stop_sequences=["END"], metadata={"user_id": "u"})
    assert request.system == "a\nb"
    assert (request.sampling.temperature, request.sampling.top_p, request.sampling.top_k) == \
        (0.2, 0.9, 5)
    assert request.stop == ["END"] and stream


@pytest.mark.parametrize("missing", ["model", "max_tokens", "messages"])
def test_required_fields_name_themselves(missing):
    body = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(InvalidRequest) as info:
        decode_messages_request(body)
    assert info.value.param == missing
    assert "Field required" in info.value.message


def test_unknown_field_is_refused_as_unsupported_parameter():
    with pytest.raises(UnsupportedParameter) as info:
        decode(frobnicate=True)
    assert info.value.param == "frobnicate"
    assert info.value.code == "unsupported_parameter"


def test_nested_paths_name_the_block():
    with pytest.raises(UnsupportedParameter) as info:
        decode(messages=[{"role": "user", "content": [
            {"type": "text", "text": "x"},
            {"type": "image", "source": {}}]}])
    assert info.value.param == "messages[0].content[1]"


def test_empty_text_block_is_refused():
    with pytest.raises(InvalidRequest) as info:
        decode(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}])
    assert info.value.param == "messages[0].content[0].text"


def test_system_role_message_uses_the_wording_claude_code_retries_on():
    with pytest.raises(InvalidRequest) as info:
        decode(messages=[{"role": "user", "content": "x"},
                         {"role": "system", "content": "y"}])
    assert info.value.code == "invalid_request"
    assert info.value.message.startswith('Unexpected role "system". The Messages API accepts '
                                         "a top-level `system` parameter")


@pytest.mark.parametrize("field,value", [("temperature", 1.5), ("top_p", -0.1),
                                         ("top_k", -1), ("max_tokens", 0)])
def test_ranges(field, value):
    with pytest.raises(InvalidRequest) as info:
        decode(**{field: value})
    assert info.value.param == field


def test_booleans_are_not_numbers():
    with pytest.raises(InvalidRequest):
        decode(max_tokens=True)


def test_count_tokens_takes_a_create_body_with_its_max_tokens():
    request = decode_count_tokens_request({"model": "m", "messages": BASE["messages"]})
    assert request.messages[0].text == "Hi"
    assert decode_count_tokens_request({**BASE}) == request


def frames_of(chunks):
    out = []
    for chunk in chunks:
        for frame in chunk.decode().split("\n\n"):
            if frame:
                event_line, data_line = frame.split("\n")
                out.append((event_line.removeprefix("event: "),
                            json.loads(data_line.removeprefix("data: "))))
    return out


def test_stream_encoder_sequence_and_event_names():
    encoder = MessageStreamEncoder("msg_1", "m")
    chunks = []
    for event in [Started(Usage(5)), TextDelta("Hel"), TextDelta("lo"),
                  Finished("end", None, Usage(5, 3))]:
        chunks += encoder.encode(event)
    frames = frames_of(chunks)
    assert all(name == data["type"] for name, data in frames)
    assert [name for name, _ in frames] == [
        "message_start", "ping", "content_block_start", "content_block_delta",
        "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert frames[0][1]["message"]["usage"]["input_tokens"] == 5
    delta = frames[-2][1]
    assert delta["delta"] == {"stop_reason": "end_turn", "stop_sequence": None,
                              "stop_details": None}
    assert delta["usage"]["output_tokens"] == 3


def test_empty_reply_has_no_blocks_in_either_form():
    result = ChatResult([], "length", None, Usage(5, 1))
    assert message_of("msg_1", "m", result).content == []
    encoder = MessageStreamEncoder("msg_1", "m")
    frames = frames_of(encoder.encode(Started(Usage(5))) +
                       encoder.encode(Finished("length", None, Usage(5, 1))))
    assert "content_block_start" not in [name for name, _ in frames]


def test_pings_keep_a_silent_stream_alive_until_it_goes_on():
    """The source stays silent until the reader has seen three pings (an event, not a
    sleep, decides when it goes on): the stream is message_start and three pings, then the
    reply with no ping, since frames reset the keep-alive timer."""
    import asyncio

    from b3os_infer.anthropic.encode import encode_stream

    async def collect():
        go_on = asyncio.Event()

        async def silent():
            yield Started(Usage(5))
            await go_on.wait()
            yield Finished("end", None, Usage(5, 1))

        encoder = MessageStreamEncoder("msg_1", "m")
        chunks, pings = [], 0
        async for chunk in encode_stream(silent(), encoder, "req_1", None, keepalive=0.01):
            chunks.append(chunk)
            pings += [name for name, _ in frames_of([chunk])].count("ping")
            if pings == 3:
                go_on.set()
        return chunks

    # a stream that sends no ping would wait forever: 5 s is a failure
    names = [name for name, _ in frames_of(asyncio.run(asyncio.wait_for(collect(), 5)))]
    assert names[:4] == ["message_start", "ping", "ping", "ping"]
    assert "ping" not in names[4:] and names[-1] == "message_stop"
