"""The real app in process, on the scripted engine, driven through the official SDKs.

``scripted_app(script)`` builds the app that ``b3os-infer serve`` builds (edge middleware,
both wire formats, the node), with one model on a ``ScriptedEngine`` (and, if asked, real
embedding models), keys in a SQLite database of its own, and a key made for the test; it
returns the SDK clients on it.

The SDKs (anthropic 2.x, openai 3.x) are built on ``httpx2``, so they talk to the app
through ``httpx2.ASGITransport``; ``http`` is a plain ``httpx`` client for raw requests.
Both transports BUFFER: they run the app to the end of its response and only then hand
the body over, so a stream arrives whole, in the right frames and order, but not
incrementally, and the client cannot disconnect halfway. Tests of timing or of
disconnects belong to tests/live.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest
from starlette.types import ASGIApp

from b3os_infer.app import create_app
from b3os_infer.compose import load_embedding_model, scripted_model
from b3os_infer.config import BertModel, ModelBasics
from b3os_infer.edge.access.keys import DEFAULT_SCOPES, KeyStore
from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry
from b3os_infer.node.server_tools.tool_run import ServerTools

SCRIPTED_MODEL = "b3os/scripted"
BASE_URL = "http://test/v1/infer"
SECRET = b"scripted-app-tests-node-secret"


@dataclass
class ScriptedApp:
    app: ASGIApp
    engine: ScriptedEngine
    key: str
    anthropic: anthropic.AsyncAnthropic
    openai: openai.AsyncOpenAI
    http: httpx.AsyncClient           # raw HTTP on the same app, base_url BASE_URL, no key
    registry: ModelRegistry
    edge: EdgeState | None = None     # the edge's state (limits, ledger, stored responses)
    model: str = SCRIPTED_MODEL
    keys: KeyStore | None = None      # the app's keys, to make another one

    def other_key(self) -> str:
        assert self.keys is not None
        return self.keys.create("another", DEFAULT_SCOPES)[1]


ScriptedAppFactory = Callable[..., Awaitable[ScriptedApp]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _script(script: Script | Sequence[Reply] | Reply) -> Script:
    if isinstance(script, Script):
        return script
    return Script(replies=(script,) if isinstance(script, Reply) else tuple(script))


@pytest.fixture
async def scripted_app(tmp_path: Path) -> AsyncIterator[ScriptedAppFactory]:
    """``await scripted_app(script)``: a Script, a list of Reply, or one Reply; ``limits``
    replaces the built-in per-minute limits; ``server_tools`` is the node's server-tool
    service (default: none configured); ``scopes`` are the test key's;
    ``default_output_tokens`` is the model's configured default output cap."""
    async with AsyncExitStack() as stack:

        async def build(script: Script | Sequence[Reply] | Reply, *,
                        model: str = SCRIPTED_MODEL,
                        embeddings: Sequence[BertModel] = (),
                        limits: LimitsConfig | None = None,
                        server_tools: ServerTools | None = None,
                        scopes: tuple[str, ...] = DEFAULT_SCOPES,
                        default_output_tokens: int | None = None) -> ScriptedApp:
            database = open_database(f"sqlite:///{tmp_path / f'edge-{id(script)}.sqlite3'}")
            stack.callback(database.dispose)
            keys = KeyStore(database)
            edge = EdgeState.for_keys(keys, limits=limits or LimitsConfig())
            stack.callback(edge.ledger.close)
            stack.push_async_callback(edge.limiter.close)
            engine = ScriptedEngine(_script(script))
            registry = ModelRegistry()
            basics = ModelBasics(id=model, default_output_tokens=default_output_tokens)
            registry.add(scripted_model(basics, engine, SECRET))
            for embedding in embeddings:  # real embedding models (numpy, small) beside it
                registry.add_embedding(load_embedding_model(embedding))
            await registry.start()
            stack.push_async_callback(registry.close)
            _, key = keys.create("app-tests", scopes)
            app = create_app(registry, keys, edge, server_tools=server_tools)
            return ScriptedApp(
                app=app, engine=engine, key=key, model=model, registry=registry, keys=keys,
                edge=edge,
                anthropic=anthropic.AsyncAnthropic(
                    api_key=key, base_url=BASE_URL, max_retries=0,
                    http_client=await _sdk_client(stack, app)),
                openai=openai.AsyncOpenAI(
                    api_key=key, base_url=BASE_URL, max_retries=0,
                    http_client=await _sdk_client(stack, app)),
                http=await stack.enter_async_context(httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app), base_url=BASE_URL)))

        yield build


async def _sdk_client(stack: AsyncExitStack, app: ASGIApp) -> httpx2.AsyncClient:
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app))
    return await stack.enter_async_context(client)
