"""The real app in process with its batch service in the test's hands.

Like ``tests/app/conftest.py``'s ``scripted_app`` (the app ``serve`` builds, on a scripted
engine, with the official SDKs on it through buffering ASGI transports), but it builds the
``BatchService`` itself, with the test's settings, queue and limits, and closes it, so its
runner stops with the test. ``other`` is a second key, for ownership tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai

from b3os_infer.app import create_app
from b3os_infer.batches.apis import batch_service
from b3os_infer.batches.service import BatchService
from b3os_infer.compose import scripted_model
from b3os_infer.config import BatchSettings, ModelBasics
from b3os_infer.edge.access.keys import DEFAULT_SCOPES, KeyStore
from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.edge.admission.queue import QueueConfig, Queues
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry

MODEL = "b3os/scripted"
BASE_URL = "http://test/v1/infer"
SECRET = b"batch-app-tests-node-secret"


@dataclass
class Clients:
    key: str
    anthropic: anthropic.AsyncAnthropic
    openai: openai.AsyncOpenAI


@dataclass
class BatchApp:
    engine: ScriptedEngine
    service: BatchService
    edge: EdgeState
    mine: Clients
    other: Clients
    http: httpx.AsyncClient   # raw, no key
    model: str = MODEL

    @property
    def anthropic(self) -> anthropic.AsyncAnthropic:
        return self.mine.anthropic

    @property
    def openai(self) -> openai.AsyncOpenAI:
        return self.mine.openai


async def _clients(stack: AsyncExitStack, app: object, key: str) -> Clients:
    async def client() -> httpx2.AsyncClient:
        return await stack.enter_async_context(
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)))  # type: ignore[arg-type]
    return Clients(key, anthropic.AsyncAnthropic(api_key=key, base_url=BASE_URL,
                                                 max_retries=0, http_client=await client()),
                   openai.AsyncOpenAI(api_key=key, base_url=BASE_URL, max_retries=0,
                                      http_client=await client()))


@asynccontextmanager
async def batch_app(tmp_path: Path, replies: Sequence[Reply], *,
                    settings: BatchSettings | None = None,
                    queue: dict[str, int] | None = None,
                    limits: dict[str, int] | None = None,
                    other_scopes: tuple[str, ...] = DEFAULT_SCOPES,
                    other_models: tuple[str, ...] | None = None) -> AsyncIterator[BatchApp]:
    """``other_scopes`` and ``other_models``: what the second key (``app.other``) may do."""
    async with AsyncExitStack() as stack:
        database = open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}")
        stack.callback(database.dispose)
        keys = KeyStore(database)
        edge = EdgeState.for_keys(keys, queues=Queues(QueueConfig(default=queue or {})),
                                  limits=LimitsConfig(default=limits or {}))
        stack.callback(edge.ledger.close)
        engine = ScriptedEngine(Script(replies=tuple(replies)))
        registry = ModelRegistry()
        registry.add(scripted_model(ModelBasics(id=MODEL), engine, SECRET))
        await registry.start()
        stack.push_async_callback(registry.close)
        service = batch_service(database, edge, keys, registry, settings)
        stack.push_async_callback(service.close)
        app = create_app(registry, keys, edge, batches=service)
        _, mine = keys.create("mine", DEFAULT_SCOPES)
        _, other = keys.create("other", other_scopes, models=other_models)
        http = await stack.enter_async_context(httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=BASE_URL))
        yield BatchApp(engine, service, edge, await _clients(stack, app, mine),
                       await _clients(stack, app, other), http)


async def until(check, what: str, turns: int = 2000) -> None:  # type: ignore[no-untyped-def]
    """Until ``check()`` (sync or async) is true, yielding to the app between looks; fails
    after ``turns`` looks 5 ms apart (a bound on a hang, not a timing assertion)."""
    for _ in range(turns):
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")
