"""GET /metrics in process: who may scrape, and every family moving by the right amount
after known requests on the scripted engine (parsed with prometheus_client's parser)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from b3os_infer.app import create_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry
from b3os_infer.observe.metrics import Metrics, MetricsConfig

pytestmark = pytest.mark.anyio
MODEL = "b3os/scripted"
TOKEN = "scrape-token-0123456789"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Metered:
    http: httpx.AsyncClient
    keys: KeyStore
    engine: ScriptedEngine
    key: str            # infer + models:read
    admin: str

    def auth(self, key: str | None = None) -> dict[str, str]:
        return {"authorization": f"Bearer {key or self.key}"}

    async def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of the scrape, by name and sorted labels."""
        response = await self.http.get("/metrics", headers=self.auth(self.admin))
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(response.text)
                for s in family.samples}

    async def message(self, text: str = "hi", **extra: object) -> httpx.Response:
        body = {"model": MODEL, "max_tokens": 64,
                "messages": [{"role": "user", "content": text}], **extra}
        return await self.http.post("/v1/infer/v1/messages", json=body, headers=self.auth())


@pytest.fixture
async def metered(tmp_path: Path) -> AsyncIterator[Callable[..., object]]:
    async with AsyncExitStack() as stack:

        async def build(*replies: Reply, limits: LimitsConfig | None = None,
                        config: MetricsConfig | None = None) -> Metered:
            database = open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}")
            stack.callback(database.dispose)
            keys = KeyStore(database)
            edge = EdgeState.for_keys(keys, limits=limits or LimitsConfig(),
                                      metrics=Metrics(config))
            stack.callback(edge.ledger.close)
            engine = ScriptedEngine(Script(replies=replies))
            registry = ModelRegistry()
            registry.add(scripted_model(ModelBasics(id=MODEL), engine,
                                        b"metrics-tests-secret"))
            await registry.start()
            stack.push_async_callback(registry.close)
            _, key = keys.create("app")
            _, admin = keys.create("ops", ("admin",))
            app = create_app(registry, keys, edge)
            http = await stack.enter_async_context(httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test"))
            return Metered(http, keys, engine, key, admin)

        yield build


def _sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_scrape_needs_the_metrics_scope_the_admin_scope_or_the_token(metered):
    app = await metered(config=MetricsConfig(token=TOKEN))
    _, reader = app.keys.create("prometheus", ("metrics:read",))
    none = await app.http.get("/metrics")
    wrong = await app.http.get("/metrics", headers=app.auth("not-the-token"))
    plain = await app.http.get("/metrics", headers=app.auth())
    answers = [await app.http.get("/metrics", headers=app.auth(k))
               for k in (reader, app.admin, TOKEN)]
    by_header = await app.http.get("/metrics", headers={"x-api-key": reader})
    assert (none.status_code, wrong.status_code, plain.status_code) == (401, 401, 403)
    assert none.json()["error"]["code"] == "missing_api_key"
    assert plain.json()["error"]["code"] == "missing_scope"
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert by_header.status_code == 200
    assert "b3os_requests_total" in answers[0].text


async def test_counters_and_histograms_move_by_each_requests_usage(metered):
    app = await metered(Reply(text="Hello there friend", cached_tokens=5, repeat=True))
    first = await app.message()
    second = await app.message(stream=True)
    cut = await app.message(max_tokens=2)
    assert (first.status_code, second.status_code, cut.status_code) == (200, 200, 200)
    usage = first.json()["usage"]
    prompt = usage["input_tokens"] + usage["cache_read_input_tokens"]
    samples = await app.scrape()

    route = "/v1/infer/v1/messages"
    model = {"model": MODEL}
    assert _sample(samples, "b3os_requests_total", model=MODEL, route=route, status="200",
                   finish_reason="end") == 2
    assert _sample(samples, "b3os_requests_total", model=MODEL, route=route, status="200",
                   finish_reason="length") == 1
    assert _sample(samples, "b3os_prompt_tokens_total", **model) == 3 * prompt
    assert _sample(samples, "b3os_prompt_tokens_cached_total", **model) == 3 * 5
    assert _sample(samples, "b3os_generation_tokens_total", **model) == \
        2 * usage["output_tokens"] + 2
    assert _sample(samples, "b3os_prefix_cache_queries_total", **model) == 3 * prompt
    assert _sample(samples, "b3os_prefix_cache_hits_total", **model) == 3 * 5
    for histogram in ("time_to_first_token_seconds", "time_per_output_token_seconds",
                      "e2e_request_latency_seconds", "request_queue_time_seconds",
                      "request_prefill_time_seconds", "request_decode_time_seconds"):
        assert _sample(samples, f"b3os_{histogram}_count", **model) == 3, histogram
    assert _sample(samples, "b3os_num_requests_running", **model) == 0
    assert _sample(samples, "b3os_num_requests_waiting", **model) == 0
    assert _sample(samples, "b3os_kv_cache_usage_perc", **model) == 0
    assert _sample(samples, "b3os_model_healthy", **model) == 1
    assert _sample(samples, "b3os_edge_queue_running", **model) == 0


async def test_running_sequences_and_kv_usage_are_read_while_a_reply_runs(metered):
    app = await metered(Reply(text="one two three four five six", delay_s=0.05))
    running = asyncio.create_task(app.message(stream=True))
    while app.engine.load()["active"] == 0:
        await asyncio.sleep(0.01)
    samples = await app.scrape()
    await running
    assert _sample(samples, "b3os_num_requests_running", model=MODEL) == 1
    held = app.engine.received[0].request.prompt
    assert 0 < _sample(samples, "b3os_kv_cache_usage_perc", model=MODEL) >= \
        len(held) / app.engine.info.context_window


async def test_auth_failures_and_rate_limit_refusals_are_counted_by_code(metered):
    app = await metered(Reply(text="ok", repeat=True),
                        limits=LimitsConfig(default={"requests_per_minute": 1}))
    assert (await app.message()).status_code == 200
    limited = await app.message()
    unknown = await app.http.post("/v1/infer/chat/completions", json={},
                                  headers={"authorization": "Bearer b3os_nope_nope"})
    missing = await app.http.post("/v1/infer/chat/completions", json={})
    samples = await app.scrape()
    assert (limited.status_code, unknown.status_code, missing.status_code) == (429, 401, 401)
    assert _sample(samples, "b3os_edge_limit_refusals_total", model=MODEL,
                   code="rate_limited") == 1
    assert _sample(samples, "b3os_edge_auth_failures_total", code="invalid_api_key") == 1
    assert _sample(samples, "b3os_edge_auth_failures_total", code="missing_api_key") == 1
    assert _sample(samples, "b3os_requests_total", model=MODEL, route="/v1/infer/v1/messages",
                   status="429", finish_reason="none") == 1
    assert _sample(samples, "b3os_requests_total", model="",
                   route="/v1/infer/chat/completions", status="401",
                   finish_reason="none") == 2


async def test_model_and_route_labels_stay_bounded(metered):
    app = await metered(Reply(text="ok", repeat=True))
    for name in ("made-up-1", "made-up-2"):
        body = {"model": name, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        assert (await app.http.post("/v1/infer/chat/completions", json=body,
                                    headers=app.auth())).status_code == 404
    for path in ("/v1/infer/no-such-route", "/v1/infer/models/made-up-3"):
        await app.http.get(path, headers=app.auth())
    samples = await app.scrape()
    labels = {dict(labels).get("model") for name, labels in samples
              if name == "b3os_requests_total"}
    routes = {dict(labels).get("route") for name, labels in samples
              if name == "b3os_requests_total"}
    assert labels <= {"other", "", MODEL}
    assert "other" in labels
    assert routes == {"/v1/infer/chat/completions", "other", "/v1/infer/models/{model_id}"}


async def test_key_ids_become_labels_only_when_configured(metered):
    app = await metered(Reply(text="ok", repeat=True),
                        config=MetricsConfig(key_labels=True))
    await app.message()
    record = next(r for r in app.keys.list() if r.name == "app")
    samples = await app.scrape()
    assert _sample(samples, "b3os_requests_total", model=MODEL, route="/v1/infer/v1/messages",
                   status="200", finish_reason="end", key=record.id) == 1
    assert _sample(samples, "b3os_generation_tokens_total", model=MODEL, key=record.id) == 1
