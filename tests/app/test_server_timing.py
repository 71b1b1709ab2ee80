"""``server-timing``: queue, prefill and decode beside total, each only once it is over."""

from __future__ import annotations

import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio
MESSAGE = {"max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}


def timings(response) -> dict[str, float]:
    """``server-timing`` entries by name, in milliseconds."""
    entries = {}
    for entry in response.headers["server-timing"].split(","):
        name, _, duration = entry.strip().partition(";dur=")
        entries[name] = float(duration)
    return entries


async def test_a_whole_reply_times_its_queue_prefill_and_decode_within_total(scripted_app):
    app = await scripted_app(Reply(text="Hello there friend", repeat=True))
    for path, body in (("/v1/messages", MESSAGE), ("/chat/completions", MESSAGE),
                       ("/responses", {"input": "hi", "max_output_tokens": 20})):
        response = await app.http.post(path, json={"model": app.model, **body},
                                       headers={"x-api-key": app.key})
        assert response.status_code == 200, response.text
        timing = timings(response)
        assert list(timing) == ["queue", "prefill", "decode", "total"], path
        assert all(value >= 0 for value in timing.values())
        assert timing["queue"] + timing["prefill"] + timing["decode"] <= timing["total"]


async def test_a_stream_sends_only_what_is_over_when_its_headers_leave(scripted_app):
    app = await scripted_app(Reply(text="Hello there friend", repeat=True))
    headers = {"x-api-key": app.key}
    messages = await app.http.post("/v1/messages", headers=headers,
                                   json={"model": app.model, "stream": True, **MESSAGE})
    chat = await app.http.post("/chat/completions", headers=headers,
                               json={"model": app.model, "stream": True, **MESSAGE})
    responses = await app.http.post("/responses", headers=headers,
                                    json={"model": app.model, "stream": True, "input": "hi"})
    # both wait for the engine's admission before they answer; Responses answers at once
    assert list(timings(messages)) == ["queue", "total"]
    assert list(timings(chat)) == ["queue", "total"]
    assert list(timings(responses)) == ["total"]


async def test_a_request_refused_before_the_engine_has_only_total(scripted_app):
    app = await scripted_app(Reply(text="ok"))
    response = await app.http.post("/v1/messages", json={"model": "nope", **MESSAGE},
                                   headers={"x-api-key": app.key})
    assert response.status_code == 404
    assert list(timings(response)) == ["total"]
