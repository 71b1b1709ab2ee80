"""OpenTelemetry spans in process, on the SDK's in-memory exporter: the GenAI attributes of
a request, its queue/prefill/decode spans, the request id on every span, and one trace
across an edge and its node (real sockets, both servers in this test's event loop)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from b3os_infer.app import create_app, create_edge_app, create_node_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry
from b3os_infer.observe.tracing import REQUEST_ID, Tracing
from support.servers import free_port
from support.uvicorn_serving import serving

pytestmark = pytest.mark.anyio
MODEL = "b3os/scripted"
SECRET = "tracing-tests-node-secret-0123456789"
BODY = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _tracing(exporter: InMemorySpanExporter) -> Tracing:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider)


def _registry(*replies: Reply) -> ModelRegistry:
    registry = ModelRegistry()
    registry.add(scripted_model(ModelBasics(id=MODEL),
                                ScriptedEngine(Script(replies)), SECRET.encode()))
    return registry


def _keys(tmp_path: Path) -> KeyStore:
    return KeyStore(open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}"))


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


async def test_a_request_has_the_genai_attributes_and_its_phase_spans_and_health_checks_none(
        tmp_path, exporter):
    keys = _keys(tmp_path)
    _, key = keys.create("app")
    registry = _registry(Reply(text="Hello there friend", cached_tokens=3))
    await registry.start()
    app = create_app(registry, keys, EdgeState.for_keys(keys), tracing=_tracing(exporter))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test") as http:
        response = await http.post("/v1/infer/v1/messages", json=BODY,
                                   headers={"x-api-key": key})
        assert (await http.get("/healthz")).status_code == 200
    await registry.close()
    reply = response.json()
    spans = _by_name(exporter.get_finished_spans())
    assert sorted(spans) == ["POST /v1/infer/v1/messages", f"chat {MODEL}", "decode",
                             "prefill", "queue"]
    server, = spans["POST /v1/infer/v1/messages"]
    chat, = spans[f"chat {MODEL}"]
    usage = reply["usage"]
    assert dict(chat.attributes or {}) == {
        REQUEST_ID: response.headers["request-id"],
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": MODEL,
        "gen_ai.request.max_tokens": 50,
        "gen_ai.response.id": reply["id"],
        "gen_ai.response.finish_reasons": ("end",),
        "gen_ai.usage.input_tokens": usage["input_tokens"] + usage["cache_read_input_tokens"],
        "gen_ai.usage.output_tokens": usage["output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": 3,
        "gen_ai.usage.reasoning.output_tokens": 0,
    }
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["http.route"] == "/v1/infer/v1/messages"
    every = exporter.get_finished_spans()
    assert {s.attributes[REQUEST_ID] for s in every} == {response.headers["request-id"]}
    assert {s.context.trace_id for s in every} == {server.context.trace_id}
    assert chat.parent.span_id == server.context.span_id
    for phase in ("queue", "prefill", "decode"):
        assert spans[phase][0].parent.span_id == chat.context.span_id
    queue, prefill, decode = (spans[p][0] for p in ("queue", "prefill", "decode"))
    assert queue.end_time <= prefill.start_time + 1 and prefill.end_time <= decode.start_time + 1


async def test_the_openai_routes_name_their_provider_operation_and_response(tmp_path, exporter):
    keys = _keys(tmp_path)
    _, key = keys.create("app")
    registry = _registry(Reply(text="one two", repeat=True))
    await registry.start()
    app = create_app(registry, keys, EdgeState.for_keys(keys), tracing=_tracing(exporter))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://test/v1/infer",
                                 headers={"authorization": f"Bearer {key}"}) as http:
        chat = await http.post("/chat/completions", json={**BODY, "max_tokens": 1})
        text = await http.post("/completions", json={"model": MODEL, "prompt": "a b",
                                                     "max_tokens": 4})
    await registry.close()
    genai = [dict(s.attributes or {}) for s in exporter.get_finished_spans()
             if "gen_ai.operation.name" in (s.attributes or {})]
    assert [(a["gen_ai.operation.name"], a["gen_ai.provider.name"], a["gen_ai.response.id"],
             a["gen_ai.response.finish_reasons"]) for a in genai] == [
        ("chat", "openai", chat.json()["id"], ("length",)),
        ("text_completion", "openai", text.json()["id"], ("end",))]


async def test_tracing_is_off_without_an_otlp_endpoint(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert not Tracing.from_env().on
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    tracing = Tracing.from_env()
    assert tracing.on
    tracing.provider.shutdown()



async def test_the_edges_trace_continues_on_its_node_and_server_timing_has_the_nodes_times(
        tmp_path, exporter):
    keys = _keys(tmp_path)
    _, key = keys.create("app")
    node_port, edge_port = free_port(), free_port()
    node = create_node_app(_registry(Reply(text="Hello there", repeat=True)), SECRET,
                           tracing=_tracing(exporter))
    edge_url = f"http://127.0.0.1:{edge_port}"
    edge = create_edge_app(EdgeState.for_keys(keys),
                           NodePool([f"http://127.0.0.1:{node_port}"], SECRET), SECRET,
                           edge_url, tracing=_tracing(exporter))
    async with serving(node, node_port), serving(edge, edge_port):
        async with httpx.AsyncClient(base_url=edge_url) as http:
            response = await http.post("/v1/infer/v1/messages", json=BODY,
                                       headers={"x-api-key": key})
            streamed = await http.post("/v1/infer/v1/messages", json={**BODY, "stream": True},
                                       headers={"x-api-key": key})
    assert (response.status_code, streamed.status_code) == (200, 200), response.text
    # the node's phases and its total (renamed node), then the edge's total
    number = r"\d+(\.\d+)?"
    assert re.fullmatch(f"queue;dur={number}, prefill;dur={number}, decode;dur={number}, "
                        f"node;dur={number}, total;dur={number}",
                        response.headers["server-timing"])
    assert re.fullmatch(f"queue;dur={number}, node;dur={number}, total;dur={number}",
                        streamed.headers["server-timing"])
    rid = response.headers["request-id"]
    spans = [s for s in exporter.get_finished_spans()
             if (s.attributes or {}).get(REQUEST_ID) == rid]
    roles = {s.attributes.get("b3os.role"): s for s in spans if "b3os.role" in s.attributes}
    assert set(roles) == {"edge", "node"}
    assert roles["node"].parent.span_id == roles["edge"].context.span_id
    assert {s.context.trace_id for s in spans} == {roles["edge"].context.trace_id}
    names = sorted(s.name for s in spans)
    assert names == sorted(["POST /v1/infer/v1/messages", "POST /v1/infer/v1/messages",
                            f"chat {MODEL}", "queue", "prefill", "decode"])
