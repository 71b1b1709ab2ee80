"""The OpenAI routes through the official Python SDK against the live server."""

from __future__ import annotations

import openai
import pytest

MODEL = "b3os/smollm2-135m-instruct"
PROMPT = [{"role": "system", "content": "Answer briefly."},
          {"role": "user", "content": "Name one river in Oregon."}]


@pytest.fixture
def client(openai_client):
    return openai_client


def test_chat_completion(client):
    completion = client.chat.completions.create(model=MODEL, messages=PROMPT, max_tokens=32)
    choice = completion.choices[0]
    assert completion.object == "chat.completion" and completion.model == MODEL
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    usage = completion.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_stream_matches_non_stream(client):
    kwargs = dict(model=MODEL, messages=PROMPT, max_completion_tokens=40, temperature=0)
    client.chat.completions.create(**kwargs)  # both compared calls then reuse the cached prompt
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **kwargs))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == whole.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == \
        whole.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_stream_helper_final_completion(client):
    with client.chat.completions.stream(model=MODEL, messages=PROMPT, max_tokens=400,
                                        temperature=0) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert "".join(deltas) == final.choices[0].message.content
    assert final.choices[0].message.role == "assistant"
    assert final.choices[0].finish_reason == "stop"


def test_stop_and_length(client):
    short = client.chat.completions.create(model=MODEL, messages=PROMPT, max_tokens=2)
    assert short.choices[0].finish_reason == "length"
    assert short.usage.completion_tokens == 2


def test_unknown_model_is_not_found_with_the_b3os_code(client):
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert info.value.code == "model_not_available" and info.value.param == "model"
    assert info.value.request_id and info.value.request_id.startswith("req_")


def test_bad_parameters_are_bad_requests(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=PROMPT, n=9)
    assert info.value.code == "invalid_request" and info.value.param == "n"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=PROMPT, temperature=3)
    assert info.value.param == "temperature"


def test_bad_key_is_an_authentication_error(live):
    with openai.OpenAI(api_key="wrong", base_url=live.base_url, max_retries=0) as bad, \
            pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_models_listing_has_the_b3os_object(client):
    models = client.models.list().data
    (model,) = [m for m in models if m.id == MODEL]
    extra = model.model_extra["b3os"]
    assert extra["kind"] == "chat" and extra["context_window"] == 32768
    assert extra["trained_context_window"] == 8192 and extra["rope_scaling"] == "yarn"
    assert extra["device"] == "cpu"   # this machine's llama.cpp build has no GPU backend
    # SmolLM2's template knows neither tools nor reasoning: ours are used, said as "generic"
    assert extra["capabilities"] == {"tools": True, "thinking": True, "vision": False,
                                     "structured_output": True, "tool_calling": "generic",
                                     "reasoning_format": "generic"}
    assert client.models.retrieve(MODEL).id == MODEL
