"""A node that breaks off a stream: the edge passes on its whole frames, drops the half one,
and ends the client's stream with the API's own error event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from b3os_infer.edge.fleet.callbacks import Tickets
from b3os_infer.edge.fleet.cut_stream import WholeFrames
from b3os_infer.edge.fleet.forward import Forwarder
from b3os_infer.edge.fleet.nodes import NodePool

MODEL = "b3os/fake"
FRAMES = [b'event: a\ndata: {"n":1}\n\n', b'event: b\ndata: {"n":2}\n\n']


def _pool() -> NodePool:
    pool = NodePool(["http://a"], "secret" * 4)
    pool.nodes[0].up, pool.nodes[0].openai_models = True, {MODEL: {"id": MODEL}}
    return pool


async def _dying_stream() -> AsyncIterator[bytes]:
    yield FRAMES[0] + FRAMES[1][:9]          # a frame and the start of the next
    yield FRAMES[1][9:] + b"event: c\ndata: {\"n"
    raise httpx.ReadError("connection reset by peer")


def _relayed(path: str) -> bytes:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_dying_stream())

    async def run() -> bytes:
        forwarder = Forwarder(_pool(), Tickets(), "secret" * 4, "http://edge")
        sent: list[dict[str, object]] = []
        request = [{"type": "http.request", "body": b'{"model": "b3os/fake"}',
                    "more_body": False}]

        async def receive() -> dict[str, object]:
            if request:
                return request.pop()
            await asyncio.sleep(30)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": path, "query_string": b"",
                 "headers": [(b"content-type", b"application/json")],
                 "state": {"request_id": "req_cut"}}
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            forwarder.client = client
            await forwarder(scope, receive, send)  # type: ignore[arg-type]
        assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
        return b"".join(m.get("body", b"") for m in sent)  # type: ignore[misc]

    return asyncio.run(run())


def _last_frame(body: bytes) -> tuple[bytes, bytes]:
    kept, _, last = body.rstrip(b"\n").rpartition(b"\n\n")
    return kept + b"\n\n", last


def test_a_cut_anthropic_stream_keeps_its_whole_frames_and_ends_with_an_error_event():
    kept, last = _last_frame(_relayed("/v1/infer/v1/messages"))
    assert kept == b"".join(FRAMES)
    name, data = last.split(b"\n")
    assert name == b"event: error"
    error = json.loads(data.removeprefix(b"data: "))
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert error["b3os"]["code"] == "node_lost" and error["request_id"] == "req_cut"
    assert "req_cut" in error["error"]["message"]


def test_a_cut_chat_completions_stream_ends_with_a_data_object_carrying_the_error():
    kept, last = _last_frame(_relayed("/v1/infer/chat/completions"))
    assert kept == b"".join(FRAMES)
    error = json.loads(last.removeprefix(b"data: "))["error"]
    assert error["type"] == "server_error" and error["code"] == "node_lost"


def test_a_cut_responses_stream_ends_with_the_error_event_numbered_after_the_frames_sent():
    kept, last = _last_frame(_relayed("/v1/infer/responses"))
    assert kept == b"".join(FRAMES)
    name, data = last.split(b"\n")
    assert name == b"event: error"
    event = json.loads(data.removeprefix(b"data: "))
    assert event == {"type": "error", "code": "node_lost", "message": event["message"],
                     "param": None, "sequence_number": 2}


@pytest.mark.parametrize("cut", range(1, len(FRAMES[0]) + len(FRAMES[1])))
def test_whole_frames_pass_only_complete_frames_wherever_the_chunks_are_cut(cut):
    stream = b"".join(FRAMES)
    frames = WholeFrames()
    passed = frames.feed(stream[:cut]) + frames.feed(stream[cut:])
    assert passed == stream and frames.pending == b"" and frames.frames == 2
