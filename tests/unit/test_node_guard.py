"""A node behind an edge calls that edge back on one client: admits, settles and the
key's stored responses alike, each call bounded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from b3os_infer.edge.fleet.node_guard import NodeGuard
from b3os_infer.edge.fleet.protocol import (
    ACCOUNTING_HEADER,
    SECRET_HEADER,
    SETTLE_TIMEOUT,
    error_to_wire,
)
from b3os_infer.edge.storage.response_store import RemoteResponses, answer
from b3os_infer.errors import Overloaded, PermissionDenied
from b3os_infer.http.accounting import ACCOUNTING_KEY
from b3os_infer.http.stored_responses import STORE_KEY, StoredResponse

SECRET = "s" * 32
CALLBACK = "http://edge.test/_b3os/accounting/ticket"


class MemoryStore:
    def __init__(self) -> None:
        self.kept: dict[str, StoredResponse] = {}

    async def put(self, stored: StoredResponse) -> None:
        self.kept[stored.id] = stored

    async def get(self, response_id: str) -> StoredResponse | None:
        return self.kept.get(response_id)

    async def delete(self, response_id: str) -> bool:
        return self.kept.pop(response_id, None) is not None


class Edge:
    """The edge's callback actions over a transport; notes each request it is sent."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.headers.get(SECRET_HEADER) != SECRET:
            return httpx.Response(403, json=error_to_wire(PermissionDenied("no secret")))
        action = request.url.path.rsplit("/", 1)[-1]
        return httpx.Response(200, json=await answer(self.store, action,
                                                     json.loads(request.content)))


def _seen_by_routes(guard_of) -> list[dict[str, Any]]:
    """What two forwarded requests put in the scope, as the node's routes see it."""
    states: list[dict[str, object]] = []

    async def routes(scope, _receive, send) -> None:
        states.append(scope["state"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = guard_of(routes)

    async def scenario() -> None:
        headers = {SECRET_HEADER: SECRET, ACCOUNTING_HEADER: CALLBACK}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=guard),
                                     base_url="http://node.test") as http:
            for _ in range(2):
                assert (await http.post("/v1/infer/responses", headers=headers)
                        ).status_code == 204
        await guard.client.aclose()

    asyncio.run(scenario())
    return [{"guard": guard, **state} for state in states]


def test_every_forwarded_request_calls_the_edge_back_on_the_guards_one_client():
    states = _seen_by_routes(lambda app: NodeGuard(app, SECRET))
    assert len(states) == 2
    for state in states:
        client = state["guard"].client   # type: ignore[attr-defined]
        assert state[STORE_KEY].client is client
        assert state[ACCOUNTING_KEY].client is client
        assert state[STORE_KEY].url == CALLBACK


def test_remote_responses_round_trip_on_one_client_each_call_bounded():
    edge = Edge()
    stored = StoredResponse(id="resp_1", model="m", body={"id": "resp_1"},
                            items=[{"type": "message"}])

    async def scenario() -> tuple[object, object, bool, bool]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(edge)) as client:
            store = RemoteResponses(CALLBACK, SECRET, client)
            await store.put(stored)
            found = await store.get("resp_1")
            deleted = await store.delete("resp_1")
            again = await store.delete("resp_1")
            missing = await store.get("resp_1")
            return found, missing, deleted, again

    found, missing, deleted, again = asyncio.run(scenario())
    assert found == stored and missing is None and deleted and not again
    assert [r.url.path.rsplit("/", 1)[-1] for r in edge.requests] == [
        "response.put", "response.get", "response.delete", "response.delete",
        "response.get"]
    assert all(r.extensions["timeout"] == SETTLE_TIMEOUT.as_dict() for r in edge.requests)


def test_remote_responses_raise_the_edges_error_and_an_unreachable_edge_is_overloaded():
    def refused(_request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    def slow(_request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no answer")

    async def call(handler, secret: str = SECRET) -> Exception:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            try:
                await RemoteResponses(CALLBACK, secret, client).get("resp_1")
            except Exception as exc:   # noqa: BLE001 - the test looks at what it is
                return exc
        raise AssertionError("the call did not fail")

    wrong = asyncio.run(call(Edge(), secret="x" * 32))
    assert isinstance(wrong, PermissionDenied)
    unreachable = asyncio.run(call(refused))
    assert isinstance(unreachable, Overloaded) and unreachable.code == "edge_unreachable"
    timed_out = asyncio.run(call(slow))
    assert isinstance(timed_out, Overloaded) and timed_out.code == "edge_timeout"

