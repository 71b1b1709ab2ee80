"""The edge's forwarder fails over on any transport failure before a node's head."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from b3os_infer.edge.fleet.callbacks import Tickets
from b3os_infer.edge.fleet.forward import Forwarder
from b3os_infer.edge.fleet.nodes import NodePool

MODEL = "b3os/fake"


async def _body() -> AsyncIterator[bytes]:
    yield b'{"ok": true}'


def _pool() -> NodePool:
    pool = NodePool(["http://a", "http://b"], "secret" * 4)
    for node in pool.nodes:
        node.up, node.openai_models = True, {MODEL: {"id": MODEL}}
    return pool


def _scope() -> dict[str, object]:
    return {"type": "http", "method": "POST", "path": "/v1/infer/chat/completions",
            "headers": [(b"content-type", b"application/json")], "query_string": b"",
            "state": {"request_id": "req_test"}}


async def _call(forwarder: Forwarder) -> list[dict[str, object]]:
    sent: list[dict[str, object]] = []
    body = [{"type": "http.request", "body": b'{"model": "b3os/fake"}', "more_body": False}]

    async def receive() -> dict[str, object]:
        if body:
            return body.pop()
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await forwarder(_scope(), receive, send)  # type: ignore[arg-type]
    return sent


@pytest.mark.parametrize("failure", [httpx.ConnectTimeout("slow"), httpx.ReadTimeout("hung"),
                                     httpx.ReadError("reset"),
                                     httpx.RemoteProtocolError("garbled")])
def test_a_transport_failure_before_the_head_marks_the_node_down_and_the_next_answers(failure):
    tried: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        tried.append(request.url.host)
        if request.url.host == "a":
            raise failure
        return httpx.Response(200, content=_body())

    async def run() -> tuple[list[dict[str, object]], NodePool]:
        pool = _pool()
        forwarder = Forwarder(pool, Tickets(), "secret" * 4, "http://edge")
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            forwarder.client = client
            for _ in range(2):   # no key, idle nodes: the two calls take turns, one starts at a
                sent = await _call(forwarder)
                assert sent[0]["status"] == 200
        return sent, pool

    sent, pool = asyncio.run(run())
    node_a = pool.nodes[0]
    assert "a" in tried and not node_a.up
    assert node_a.problem is not None and type(failure).__name__ in node_a.problem
    assert pool.nodes[1].up


def test_every_node_failing_is_a_shaped_503_that_names_no_internal_text():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused by 10.0.0.5")

    async def run() -> list[dict[str, object]]:
        forwarder = Forwarder(_pool(), Tickets(), "secret" * 4, "http://edge")
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            forwarder.client = client
            return await _call(forwarder)

    sent = asyncio.run(run())
    assert sent[0]["status"] == 503   # overloaded, on an OpenAI route
    body = b"".join(m.get("body", b"") for m in sent)  # type: ignore[misc]
    assert b"no_node_available" in body and b"10.0.0.5" not in body


def test_a_node_that_drains_is_left_for_the_next_one():
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "a":
            return httpx.Response(503, headers={"x-b3os-draining": "1"}, json={})
        return httpx.Response(200, content=_body())

    async def run() -> tuple[list[int], NodePool]:
        pool = _pool()
        forwarder = Forwarder(pool, Tickets(), "secret" * 4, "http://edge")
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            forwarder.client = client
            statuses = [int((await _call(forwarder))[0]["status"])  # type: ignore[call-overload]
                        for _ in range(2)]
        return statuses, pool

    statuses, pool = asyncio.run(run())
    assert statuses == [200, 200]
    assert not pool.nodes[0].up and pool.nodes[0].problem == "shutting down"
