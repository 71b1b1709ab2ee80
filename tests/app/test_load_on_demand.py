"""Models loaded on demand, in the real app through the official SDKs: the listing's
``b3os.state`` on both APIs, the first request's ``load`` in ``server-timing``, the node's
bound unloading the least recently used model, a model that cannot load answering 503 while
the others serve, and the admin routes that load, unload and pin.

The models are scripted, each behind the same ``OnDemandEngine`` the embedded GGUF models
have (their load is building the engine in a thread); the live test
(tests/live/test_live_load_on_demand.py) does the same with real GGUF models.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest

from b3os_infer.app import create_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import DEFAULT_SCOPES, KeyStore
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.base import Engine
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.lifecycle import Bounds, OnDemandEngine, Residency
from b3os_infer.node.registry import ModelRegistry

pytestmark = pytest.mark.anyio
BASE_URL = "http://test/v1/infer"
SECRET = b"load-on-demand-tests"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Builds:
    counts: dict[str, int] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)

    def loader(self, model_id: str, engine: ScriptedEngine):  # noqa: ANN201 - a closure
        def build() -> Engine:
            self.counts[model_id] = self.counts.get(model_id, 0) + 1
            time.sleep(0.05)
            if model_id in self.broken:
                raise RuntimeError(f"llama.cpp could not load /models/{model_id}.gguf")
            return engine
        return build


@dataclass
class Node:
    registry: ModelRegistry
    builds: Builds
    http: httpx.AsyncClient
    anthropic: anthropic.AsyncAnthropic
    openai: openai.AsyncOpenAI
    key: str
    admin: dict[str, str]


def on_demand_model(registry: ModelRegistry, builds: Builds, model_id: str, text: str):  # noqa: ANN201
    engine = ScriptedEngine(Script(replies=(Reply(text=text, repeat=True),)))
    chat = scripted_model(ModelBasics(id=model_id), engine, SECRET)
    chat.engine = OnDemandEngine(model_id, builds.loader(model_id, engine), engine,
                                 engine.info, registry.keeper, Residency(300, 2**20))
    registry.add(chat)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    builds = Builds()
    registry = ModelRegistry(Bounds(max_models=1))
    for model_id, text in (("b3os/one", "one speaks"), ("b3os/two", "two speaks"),
                           ("b3os/broken", "never")):
        on_demand_model(registry, builds, model_id, text)
    builds.broken.add("b3os/broken")
    database = open_database(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    keys = KeyStore(database)
    edge = EdgeState.for_keys(keys)
    _, key = keys.create("user", DEFAULT_SCOPES)
    _, admin = keys.create("ops", ("admin",))
    app = create_app(registry, keys, edge)
    await registry.start()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=BASE_URL) as http, \
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)) as sdk_http:
        yield Node(registry, builds, http,
                   anthropic.AsyncAnthropic(api_key=key, base_url=BASE_URL, max_retries=0,
                                            http_client=sdk_http),
                   openai.AsyncOpenAI(api_key=key, base_url=BASE_URL, max_retries=0,
                                      http_client=sdk_http),
                   key, {"authorization": f"Bearer {admin}"})
    await registry.close()
    edge.ledger.close()
    await edge.limiter.close()
    database.dispose()


async def states(node: Node) -> tuple[dict[str, str], dict[str, str]]:
    """Each model's ``b3os.state`` in the OpenAI listing and in the Anthropic one."""
    listed = await node.openai.models.list()
    openai_states = {m.id: (m.model_extra or {})["b3os"]["state"] for m in listed.data}
    page = await node.anthropic.models.list()
    anthropic_states = {m.id: (m.model_extra or {})["b3os"]["state"] for m in page.data}
    return openai_states, anthropic_states


def streamed_text(response: httpx.Response) -> str:
    """The text of an Anthropic stream's ``text_delta`` events."""
    events = [json.loads(line[len("data: "):]) for line in response.text.splitlines()
              if line.startswith("data: ")]
    return "".join(e["delta"]["text"] for e in events
                   if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")


def timing_names(response: httpx.Response) -> list[str]:
    return [entry.strip().partition(";")[0]
            for entry in response.headers["server-timing"].split(",")]


async def test_every_model_is_listed_unloaded_on_both_apis_until_its_first_request(node):
    assert await states(node) == ({"b3os/one": "unloaded", "b3os/two": "unloaded",
                                   "b3os/broken": "unloaded"},) * 2
    message = await node.anthropic.messages.create(
        model="b3os/one", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "one speaks"
    openai_states, anthropic_states = await states(node)
    assert openai_states == anthropic_states
    assert openai_states["b3os/one"] == "loaded" and openai_states["b3os/two"] == "unloaded"
    assert node.builds.counts == {"b3os/one": 1}


async def test_the_request_that_waited_for_the_load_says_so_in_server_timing(node):
    body = {"model": "b3os/two", "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}]}
    headers = {"x-api-key": node.key}
    first = await node.http.post("/v1/messages", json=body, headers=headers)
    second = await node.http.post("/v1/messages", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert timing_names(first)[0] == "load"
    assert float(first.headers["server-timing"].split("load;dur=")[1].split(",")[0]) >= 50
    assert "load" not in timing_names(second)


async def test_with_room_for_one_model_the_next_one_unloads_the_idle_one_on_both_apis(node):
    chat = await node.openai.chat.completions.create(
        model="b3os/one", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content == "one speaks"
    stream = await node.openai.chat.completions.create(
        model="b3os/two", max_tokens=16, stream=True,
        messages=[{"role": "user", "content": "hi"}])
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "two speaks"
    openai_states, _ = await states(node)
    assert (openai_states["b3os/one"], openai_states["b3os/two"]) == ("unloaded", "loaded")


async def test_a_model_that_cannot_load_answers_503_with_its_reason_and_the_others_serve(node):
    with pytest.raises(anthropic.APIStatusError) as failed:
        await node.anthropic.messages.create(
            model="b3os/broken", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert failed.value.status_code == 503
    assert "b3os/broken could not be loaded" in failed.value.message
    assert "/models/" not in failed.value.message          # the detail is in the log only
    with pytest.raises(openai.APIStatusError) as also:
        await node.openai.chat.completions.create(
            model="b3os/broken", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert also.value.status_code == 503 and also.value.code == "model_load_failed"
    served = await node.openai.chat.completions.create(
        model="b3os/one", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert served.choices[0].message.content == "one speaks"
    health = await node.http.get("http://test/healthz")
    assert health.status_code == 200               # one model's failed load is not the node's
    models = health.json()["models"]
    assert "could not be loaded" in models["b3os/broken"]["problem"]
    assert models["b3os/one"]["state"] == "loaded"


async def test_admin_routes_load_pin_and_unload_a_model(node):
    admin = node.admin
    loaded = await node.http.post("/admin/models/b3os/two/load", headers=admin)
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["state"] == "loaded" and loaded.json()["on_demand"] is True
    pinned = (await node.http.post("/admin/models/b3os/two/pin", headers=admin)).json()
    assert pinned["pinned"] is True and pinned["keep_alive_left"] is None
    with pytest.raises(openai.APIStatusError) as busy:   # room for one, and it is pinned
        await node.openai.chat.completions.create(
            model="b3os/one", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert busy.value.status_code == 503 and busy.value.code == "models_busy"
    unloaded = (await node.http.post("/admin/models/b3os/two/unload", headers=admin)).json()
    assert (unloaded["state"], unloaded["pinned"]) == ("unloaded", False)
    listing = (await node.http.get("/admin/models", headers=admin)).json()
    assert {m["id"]: m["state"] for m in listing["data"]} == {
        "b3os/one": "unloaded", "b3os/two": "unloaded", "b3os/broken": "unloaded"}


async def test_admin_model_routes_need_the_admin_scope_and_name_served_models(node):
    user = {"authorization": f"Bearer {node.key}"}
    refused = await node.http.post("/admin/models/b3os/one/load", headers=user)
    assert refused.status_code == 403
    unknown = await node.http.post("/admin/models/nope/load", headers=node.admin)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == \
        "model_not_available"
    assert node.builds.counts == {}


async def test_a_stream_whose_model_must_load_starts_at_once_and_ends_in_the_apis_error(node):
    headers = {"x-api-key": node.key}
    body = {"max_tokens": 16, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    loading = await node.http.post("/v1/messages", headers=headers,
                                   json={**body, "model": "b3os/two"})
    assert loading.status_code == 200 and streamed_text(loading) == "two speaks"
    assert "load" not in timing_names(loading)    # its headers left before the load ended
    failed = await node.http.post("/v1/messages", headers=headers,
                                  json={**body, "model": "b3os/broken"})
    assert failed.status_code == 200
    assert failed.text.startswith("event: error") and "could not be loaded" in failed.text
    chat = await node.http.post("/chat/completions", headers=headers,
                                json={**body, "model": "b3os/broken"})
    assert chat.status_code == 200 and '"code":"model_load_failed"' in chat.text.replace(" ", "")


async def test_the_metrics_say_which_models_are_loaded(node):
    await node.openai.chat.completions.create(
        model="b3os/one", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    scrape = (await node.http.get("http://test/metrics", headers=node.admin)).text
    assert 'b3os_model_loaded{model="b3os/one"} 1.0' in scrape
    assert 'b3os_model_loaded{model="b3os/two"} 0.0' in scrape
