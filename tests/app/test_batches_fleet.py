"""Behind a fleet edge (an edge with remote nodes) batches are not served, and said so.

The edge answers every batch and file route itself, after the key is checked, with a 404
in the API's shape and b3os code ``batches_not_available`` (docs/batches.md, "Not
served"), through the official SDKs; other routes still go to the nodes. The edge runs in
process with a node that is never reached: none of these requests needs one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

import anthropic
import httpx
import httpx2
import openai
import pytest

from b3os_infer.app import create_edge_app
from b3os_infer.batches.anthropic.routes import routes as anthropic_batch_routes
from b3os_infer.batches.behind_fleet import batch_path
from b3os_infer.batches.openai_api.routes import routes as openai_batch_routes
from b3os_infer.edge.access.keys import DEFAULT_SCOPES, KeyStore
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.http.formats import BASE

pytestmark = pytest.mark.anyio

SECRET = "batches-fleet-tests-node-secret-0123"
BASE_URL = "http://edge.test/v1/infer"
PARAMS = {"model": "b3os/any", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def fleet_edge(tmp_path) -> AsyncIterator[tuple[object, str]]:
    database = open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}")
    keys = KeyStore(database)
    _, key = keys.create("fleet", DEFAULT_SCOPES)
    edge = EdgeState.for_keys(keys)
    yield create_edge_app(edge, NodePool(["http://127.0.0.1:9"], SECRET), SECRET,
                          "http://edge.test"), key
    edge.ledger.close()
    database.dispose()


def _client(app: object) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))  # type: ignore[arg-type]


def test_every_batch_and_file_route_is_a_batch_path():
    paths = [r.path for r in anthropic_batch_routes(BASE) + openai_batch_routes(BASE)]
    assert len(paths) > 10 and all(batch_path(p) for p in paths)
    assert not any(batch_path(BASE + p) for p in ("/v1/messages", "/chat/completions",
                                                   "/responses", "/models", "/batchesx"))


async def test_anthropic_batches_behind_a_fleet_edge_are_a_clear_not_found(fleet_edge):
    app, key = fleet_edge
    async with _client(app) as http:
        client = anthropic.AsyncAnthropic(api_key=key, base_url=BASE_URL, max_retries=0,
                                          http_client=http)
        calls: list[Awaitable[object]] = [
            client.messages.batches.create(requests=[{"custom_id": "a", "params": PARAMS}]),
            client.messages.batches.retrieve("msgbatch_x"),
            client.messages.batches.list()]
        for call in calls:
            with pytest.raises(anthropic.NotFoundError) as refused:
                await call
            body = refused.value.body
            assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
            assert body["b3os"]["code"] == "batches_not_available"
            assert "fleet edge" in body["error"]["message"]
            assert refused.value.response.headers["request-id"].startswith("req_")


async def test_openai_batches_and_files_behind_a_fleet_edge_are_a_clear_not_found(fleet_edge):
    app, key = fleet_edge
    async with _client(app) as http:
        client = openai.AsyncOpenAI(api_key=key, base_url=BASE_URL, max_retries=0,
                                    http_client=http)
        calls: list[Awaitable[object]] = [
            client.files.create(file=("in.jsonl", b"{}\n"), purpose="batch"),
            client.files.list(),
            client.batches.create(input_file_id="file-x", endpoint="/v1/chat/completions",
                                  completion_window="24h"),
            client.batches.retrieve("batch_x")]
        for call in calls:
            with pytest.raises(openai.NotFoundError) as refused:
                await call
            assert refused.value.code == "batches_not_available"
            assert "docs/scale-out.md" in refused.value.message


async def test_the_key_is_checked_first_and_other_routes_still_go_to_the_nodes(fleet_edge):
    app, key = fleet_edge
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=BASE_URL) as http:
        anonymous = await http.get("/batches")
        chat = await http.post("/v1/messages", json=PARAMS, headers={"x-api-key": key})
    assert anonymous.status_code == 401
    # the one node was never reached (no health check ran): the model is not listed
    assert chat.status_code == 404 and chat.json()["b3os"]["code"] == "model_not_available"
