"""Server tools behind a fleet edge: the node never sees the key, so the edge says which
node-checked scopes it lacks (``x-b3os-denied-scopes``) and the node refuses server tools
for it; a key with the scope runs them on the node. The edge and a node are the real apps,
served by uvicorn on loopback, driven through the official SDK."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anthropic
import httpx2
import pytest

from b3os_infer.app import create_edge_app, create_node_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import DEFAULT_SCOPES, KeyStore
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry
from b3os_infer.node.server_tools.searxng import SearxngBackend
from b3os_infer.node.server_tools.tool_run import ServerTools
from support.servers import free_port
from support.uvicorn_serving import serving
from support.web_servers import searxng_server

pytestmark = pytest.mark.anyio

SECRET = "server-tools-fleet-tests-node-secret"
MODEL = "b3os/scripted"
CALL = '<tool_call>\n{"name": "web_search", "arguments": {"query": "fleet"}}\n</tool_call>'
TOOL = {"type": "web_search_20250305", "name": "web_search"}
RESULTS = [{"url": "https://example.org/fleet", "title": "Fleet", "content": "Many nodes."}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_edge_carries_a_missing_server_tools_scope_to_the_node(tmp_path):
    keys = KeyStore(open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}"))
    _, allowed = keys.create("allowed", DEFAULT_SCOPES)
    _, denied = keys.create("denied", ("infer", "models:read"))
    engine = ScriptedEngine(Script(replies=(Reply(CALL), Reply("Found it."))))
    registry = ModelRegistry()
    registry.add(scripted_model(ModelBasics(id=MODEL), engine,
                                SECRET.encode()))
    node_port, edge_port = free_port(), free_port()
    edge_url = f"http://127.0.0.1:{edge_port}"
    async with AsyncExitStack() as stack:
        searxng = stack.enter_context(searxng_server(RESULTS))
        node = create_node_app(registry, SECRET, server_tools=ServerTools(
            search=SearxngBackend(searxng.url)))
        edge = create_edge_app(EdgeState.for_keys(keys),
                               NodePool([f"http://127.0.0.1:{node_port}"], SECRET), SECRET,
                               edge_url)
        await stack.enter_async_context(serving(node, node_port))
        await stack.enter_async_context(serving(edge, edge_port))
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))

        def client(key: str) -> anthropic.AsyncAnthropic:
            return anthropic.AsyncAnthropic(api_key=key, base_url=edge_url + "/v1/infer",
                                            max_retries=0, http_client=http)

        ask = {"model": MODEL, "max_tokens": 100, "tools": [TOOL],
               "messages": [{"role": "user", "content": "search"}]}
        with pytest.raises(anthropic.PermissionDeniedError) as refused:
            await client(denied).messages.create(**ask)   # type: ignore[arg-type]
        # a client cannot lift the refusal by sending the header itself
        with pytest.raises(anthropic.PermissionDeniedError):
            await client(denied).messages.create(
                **ask, extra_headers={"x-b3os-denied-scopes": ""})  # type: ignore[arg-type]
        message = await client(allowed).messages.create(**ask)  # type: ignore[arg-type]
    assert refused.value.body["b3os"] == {"code": "missing_scope", "param": "tools"}
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result",
                                                 "text"]
    assert message.usage.server_tool_use.web_search_requests == 1
    assert len(engine.received) == 2     # the refused requests never reached the engine
