"""The Anthropic routes through the official Python SDK against the live server."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

MODEL = "b3os/smollm2-135m-instruct"
PROMPT = [{"role": "user", "content": "Name one river in Oregon."}]
# anthropic>=2 dropped the sampling fields from its typed signature; they travel in the body
GREEDY = {"temperature": 0}


@pytest.fixture
def client(anthropic_client):
    return anthropic_client


def test_seed_python_example(client):
    message = client.messages.create(model=MODEL, max_tokens=256, messages=PROMPT)
    assert message.type == "message" and message.role == "assistant"
    assert message.id.startswith("msg_")
    assert message.content and message.content[0].type == "text"
    assert message.content[0].text.strip()
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_x_api_key_works_too(live):
    with anthropic.Anthropic(api_key=live.key, base_url=live.base_url, max_retries=0) as client:
        message = client.messages.create(model=MODEL, max_tokens=4, messages=PROMPT)
    assert message.usage.output_tokens >= 1


def test_stream_text_joins_to_the_final_message(client):
    with client.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT,
                                extra_body=GREEDY) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces and "".join(pieces) == final.content[0].text
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    assert final.stop_reason in ("end_turn", "max_tokens")


def test_stream_and_non_stream_give_the_same_message(client):
    kwargs = dict(model=MODEL, max_tokens=48, messages=PROMPT, extra_body=GREEDY)
    # the prompt's KV is cached after the first call; compare two calls that both reuse it,
    # since logits computed in a different batch shape may differ in the last bits
    client.messages.create(**kwargs)
    whole = client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        streamed = stream.get_final_message()
    assert [b.model_dump() for b in streamed.content] == [b.model_dump() for b in whole.content]
    assert (streamed.stop_reason, streamed.stop_sequence) == (whole.stop_reason,
                                                              whole.stop_sequence)
    assert streamed.usage.input_tokens == whole.usage.input_tokens
    assert streamed.usage.output_tokens == whole.usage.output_tokens


def test_every_sse_frame_names_its_type(live):
    body = {"model": MODEL, "max_tokens": 16, "messages": PROMPT, "stream": True}
    headers = {"authorization": f"Bearer {live.key}", "anthropic-version": "2023-06-01"}
    with httpx.stream("POST", live.base_url + "/v1/messages?beta=true", json=body,
                      headers=headers, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = response.read().decode().strip().split("\n\n")
    names = []
    for frame in frames:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        name = event_line.removeprefix("event: ")
        assert json.loads(data_line.removeprefix("data: "))["type"] == name
        names.append(name)
    assert names[0] == "message_start" and names[-1] == "message_stop"


def test_count_tokens_equals_the_reported_input_tokens(client):
    request = dict(model=MODEL, messages=[{"role": "user", "content": "Hello there"},
                                          {"role": "assistant", "content": "Hi!"},
                                          {"role": "user", "content": "Tell me a fact."}],
                   system="Be brief.")
    counted = client.messages.count_tokens(**request)
    message = client.messages.create(max_tokens=2, **request)
    assert message.usage.cache_read_input_tokens == 0
    assert counted.input_tokens == message.usage.input_tokens > 0


def test_stop_sequence_is_reported_and_excluded(client):
    probe = client.messages.create(model=MODEL, max_tokens=40, messages=PROMPT, extra_body=GREEDY)
    words = probe.content[0].text.split()
    assert len(words) >= 3, probe.content[0].text
    stop = words[2]
    kwargs = dict(model=MODEL, max_tokens=40, messages=PROMPT, extra_body=GREEDY,
                  stop_sequences=[stop])
    message = client.messages.create(**kwargs)
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == stop
    assert stop not in message.content[0].text
    with client.messages.stream(**kwargs) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_sequence == stop
    assert streamed.content[0].text == message.content[0].text


def test_max_tokens_stop_reason(client):
    message = client.messages.create(model=MODEL, max_tokens=3, messages=PROMPT)
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 3


def test_assistant_prefill_is_continued_not_repeated(client):
    message = client.messages.create(
        model=MODEL, max_tokens=12, extra_body=GREEDY,
        messages=[*PROMPT, {"role": "assistant", "content": "One river in Oregon is the"}])
    assert not message.content[0].text.startswith("One river")


# the SDK warns that this Claude model is deprecated; the name is the seed page's example
@pytest.mark.filterwarnings("ignore:The model 'claude-sonnet-4-5' is deprecated")
def test_unknown_model_is_the_seed_pages_404(live, client):
    with pytest.raises(anthropic.NotFoundError) as info:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=PROMPT)
    body = info.value.body
    assert body["type"] == "error"
    assert body["error"] == {
        "type": "not_found_error",
        "message": "claude-sonnet-4-5 is not served on this node; GET /v1/infer/models "
                   "lists the models that are"}
    assert body["b3os"] == {"code": "model_not_available", "param": "model"}
    assert body["request_id"] == info.value.response.headers["request-id"]


def test_bad_and_missing_keys_are_authentication_errors(live):
    with anthropic.Anthropic(api_key="b3os_nope_nope", base_url=live.base_url,
                             max_retries=0) as bad, \
            pytest.raises(anthropic.AuthenticationError) as info:
        bad.messages.create(model=MODEL, max_tokens=4, messages=PROMPT)
    assert info.value.body["error"]["type"] == "authentication_error"
    response = httpx.post(live.base_url + "/v1/messages", json={})
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_invalid_requests_are_400_in_anthropics_shape(live, client):
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model=MODEL, max_tokens=4, messages=PROMPT, extra_body={"top_k": -3})
    assert info.value.body["b3os"]["param"] == "top_k"
    assert info.value.response.headers["x-should-retry"] == "false"
    raw = httpx.post(live.base_url + "/v1/messages", content=b"{not json",
                     headers={"x-api-key": live.key, "content-type": "application/json"})
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "invalid_request_error"


def test_max_tokens_over_the_model_limit_is_lowered_to_it(client):
    limit = client.models.retrieve(MODEL).max_tokens
    message = client.messages.create(model=MODEL, max_tokens=40000, messages=PROMPT,
                                     timeout=300)
    assert limit == 8192
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert 0 < message.usage.output_tokens <= limit


def test_unknown_route_and_wrong_method_are_anthropic_shaped(live):
    headers = {"x-api-key": live.key}
    missing = httpx.get(live.base_url + "/v1/nothing-here", headers=headers)
    assert missing.status_code == 404 and missing.json()["type"] == "error"
    wrong = httpx.get(live.base_url + "/v1/messages", headers=headers)
    assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "invalid_request_error"


def test_models_in_anthropics_shape(client):
    page = client.models.list()
    ids = [m.id for m in page.data]
    assert MODEL in ids
    model = client.models.retrieve(MODEL)
    assert model.id == MODEL and model.type == "model"
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-opus-4")
