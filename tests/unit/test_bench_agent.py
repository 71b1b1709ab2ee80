"""The agent scenario's logic: the replayed bodies, the stream it times, the three steps
across a restart (an in-memory transport stands in for the servers; no model)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from bench import agent
from bench.capture import short_reply
from bench.servers import Server

BODY = {"model": "claude", "max_tokens": 32000, "stream": True,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1;"},
                   {"type": "text", "text": "You are an agent."}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>skills</system-reminder>"},
            {"type": "text", "text": "Name one river in Oregon."}]}]}


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def start(input_tokens: int, cached: int) -> dict[str, Any]:
    return {"type": "message_start", "message": {"usage": {
        "input_tokens": input_tokens, "cache_read_input_tokens": cached, "output_tokens": 0}}}


DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A"}}


def test_replay_keeps_the_prefix_and_changes_only_what_it_must():
    again = agent.replay(BODY, "b3os/qwen", "List the files.")
    assert (again["model"], again["max_tokens"], again["stream"]) == \
        ("b3os/qwen", agent.REPLY_TOKENS, True)
    assert again["system"] == [{"type": "text", "text": "You are an agent."}]
    assert again["tools"] == BODY["tools"]
    assert again["messages"][0]["content"] == [
        {"type": "text", "text": "<system-reminder>skills</system-reminder>"},
        {"type": "text", "text": "List the files."}]
    assert agent.replay(BODY, "m", None)["messages"] == BODY["messages"]
    assert BODY["system"][0]["text"].startswith("x-anthropic")   # the recording is untouched


def test_the_recorded_request_is_claude_codes_whole_first_request():
    body = agent.recorded()
    assert len(body["tools"]) == 24 and body["stream"] is True
    assert not any(m["role"] == "system" for m in body["messages"])
    replayed = agent.replay(body, "b3os/qwen2.5-coder-0.5b", None)
    assert len(replayed["system"]) == len(body["system"]) - 1
    assert sum(len(b["text"]) for b in replayed["system"]) > 5000


def test_usage_adds_the_three_parts_of_an_anthropic_prompt():
    usage = agent.Usage()
    usage.read(start(100, 17000))
    usage.read({"type": "message_delta", "usage": {"output_tokens": 3,
                                                   "cache_creation_input_tokens": 20}})
    assert (usage.computed, usage.cached) == (120, 17000)


def served(handler: Any) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


SERVER = Server(name="s", chat_url="", model="m", messages_url="http://s/v1/messages",
                headers={"x-api-key": "k"})


def send(handler: Any) -> agent.Reply:
    async def go() -> agent.Reply:
        async with httpx.AsyncClient(transport=served(handler)) as client:
            return await agent.send(client, SERVER, agent.replay(BODY, "m", None))
    return asyncio.run(go())


def test_send_reads_the_usage_and_sends_the_anthropic_headers():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=sse(start(5, 40), {"type": "ping"}, DELTA,
                                               {"type": "message_stop"}))

    reply = send(handler)
    assert (reply.computed_tokens, reply.cached_tokens, reply.prompt_tokens) == (5, 40, 45)
    assert 0 < reply.ttft <= reply.total
    assert seen[0].headers["anthropic-version"] == "2023-06-01"
    assert seen[0].headers["x-api-key"] == "k"
    assert json.loads(seen[0].content)["max_tokens"] == agent.REPLY_TOKENS


def test_the_capture_servers_reply_is_a_stream_send_can_time():
    reply = send(lambda request: httpx.Response(200, content=short_reply("m")))
    assert (reply.computed_tokens, reply.cached_tokens) == (1, 0)


@pytest.mark.parametrize("response, error", [
    (httpx.Response(400, content=b'{"error": "no"}'), "s answered 400"),
    (httpx.Response(200, content=sse({"type": "error", "error": {"type": "overloaded"}})),
     "streamed an error"),
])
def test_a_refusal_or_a_streamed_error_stops_the_run(response, error):
    with pytest.raises(RuntimeError, match=error):
        send(lambda request: response)


def test_run_restarts_the_server_before_its_last_step():
    launches: list[str] = []
    prompts: list[str] = []

    @contextmanager
    def launch() -> Iterator[Server]:
        launches.append("start")
        yield SERVER
        launches.append("stop")

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        prompts.append(body["messages"][-1]["content"][-1]["text"])
        cached = 0 if len(prompts) == 1 else 30
        return httpx.Response(200, content=sse(start(50 - cached, cached), DELTA))

    replies = asyncio.run(agent.run(launch, lambda text: None, BODY, served(handler)))
    assert launches == ["start", "stop", "start", "stop"]
    assert list(replies) == ["cold", "new conversation", "after restart"]
    assert prompts == ["Name one river in Oregon.", agent.PROMPTS["new conversation"],
                       agent.PROMPTS["after restart"]]
    assert [r.cached_tokens for r in replies.values()] == [0, 30, 30]


def test_run_without_a_restart_stops_after_the_new_conversation():
    @contextmanager
    def launch() -> Iterator[Server]:
        yield SERVER

    replies = asyncio.run(agent.run(
        launch, lambda text: None, BODY,
        served(lambda request: httpx.Response(200, content=sse(start(5, 0), DELTA))),
        restart=False))
    assert list(replies) == ["cold", "new conversation"]
