"""Metrics and traces of real server processes (the scripted engine): one process scraped
with the metrics token and with an admin key after SDK requests, a fleet's node and edge
each scraped on their own, and the spans a process exports to an OTLP/HTTP receiver."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from support.servers import cli, free_port, stop, wait_healthy

MODEL = "b3os/scripted"
TOKEN = "live-scrape-token-0123456789"
SECRET = "metrics-fleet-secret-0123456789abcdef"
SCRIPT = {"replies": [{"text": "Hello there friend", "repeat": True, "cached_tokens": 4}]}
HI = [{"role": "user", "content": "hi"}]


def _config(tmp_path: Path) -> Path:
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    path = tmp_path / "b3os.toml"
    path.write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\nscript = "script.json"\n'
                    f'[metrics]\ntoken = "{TOKEN}"\n')
    return path


def scrape(root: str, credential: str) -> dict[tuple[str, frozenset], float]:
    response = httpx.get(root + "/metrics", headers={"authorization": f"Bearer {credential}"})
    assert response.status_code == 200, response.text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps every span it is sent."""

    spans: list = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's API
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["content-length"])))
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            for scope in resource.scope_spans:
                self.spans.extend((service, span) for span in scope.spans)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def _value(attribute) -> object:
    kind = attribute.value.WhichOneof("value")
    if kind == "array_value":
        return tuple(v.string_value for v in attribute.value.array_value.values)
    return getattr(attribute.value, kind)


@pytest.fixture(scope="module")
def collector() -> Iterator[str]:
    """An OTLP/HTTP receiver on a free port; its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class Served:
    root: str
    key: str      # infer and models:read
    admin: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, collector: str) -> Iterator[Served]:
    """``serve`` on the scripted engine, exporting its spans to ``collector``."""
    tmp_path = tmp_path_factory.mktemp("served")
    home = tmp_path / "home"
    home.mkdir()
    key = cli(home, "keys", "create", "--name", "app").stdout.strip().splitlines()[-1]
    admin = cli(home, "keys", "create", "--name", "ops", "--scope", "admin"
                ).stdout.strip().splitlines()[-1]
    port = free_port()
    env = {**os.environ, "B3OS_INFER_HOME": str(home), "PYTHONUNBUFFERED": "1",
           "OTEL_EXPORTER_OTLP_ENDPOINT": collector, "OTEL_SERVICE_NAME": "b3os-live-test",
           "OTEL_BSP_SCHEDULE_DELAY": "100"}   # ms between the exporter's batches
    process = subprocess.Popen([sys.executable, "-m", "b3os_infer.cli", "serve", "--port",
                                str(port), "--config", str(_config(tmp_path))], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield Served(root, key, admin)
    finally:
        stop(process)


def test_a_served_process_counts_sdk_requests_in_its_scrape(served):
    root, key, admin = served.root, served.key, served.admin
    before = scrape(root, TOKEN)
    with anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer", max_retries=0) as sdk:
        message = sdk.messages.create(model=MODEL, max_tokens=20, messages=HI)
    with openai.OpenAI(api_key=key, base_url=root + "/v1/infer", max_retries=0) as oa:
        chunks = list(oa.chat.completions.create(model=MODEL, max_tokens=20, messages=HI,
                                                  stream=True,
                                                  stream_options={"include_usage": True}))
    assert httpx.get(root + "/metrics").status_code == 401
    assert httpx.get(root + "/metrics", headers={"x-api-key": key}).status_code == 403
    after = scrape(root, admin)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    prompt = message.usage.input_tokens + message.usage.cache_read_input_tokens
    assert moved("b3os_requests_total", model=MODEL, route="/v1/infer/v1/messages",
                 status="200", finish_reason="end") == 1
    assert moved("b3os_requests_total", model=MODEL, route="/v1/infer/chat/completions",
                 status="200", finish_reason="end") == 1
    assert moved("b3os_requests_total", model="", route="/metrics", status="401",
                 finish_reason="none") == 1
    assert moved("b3os_requests_total", model="", route="/metrics", status="200",
                 finish_reason="none") == 1          # the token's scrape (before)
    assert moved("b3os_generation_tokens_total", model=MODEL) == \
        message.usage.output_tokens + chunks[-1].usage.completion_tokens
    assert moved("b3os_prompt_tokens_cached_total", model=MODEL) == 2 * 4
    assert moved("b3os_prefix_cache_queries_total", model=MODEL) == \
        prompt + chunks[-1].usage.prompt_tokens
    assert moved("b3os_time_to_first_token_seconds_count", model=MODEL) == 2
    assert sample(after, "b3os_model_healthy", model=MODEL) == 1


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home), "PYTHONUNBUFFERED": "1",
           "B3OS_INFER_NODE_SECRET": SECRET}
    return subprocess.Popen([sys.executable, "-m", "b3os_infer.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_node_up(edge: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read()  # type: ignore[union-attr]
        try:
            if httpx.get(edge + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the edge never saw its node up")


def test_a_fleets_node_and_edge_each_answer_their_own_scrape(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = _config(tmp_path)
    node, edge = (f"http://127.0.0.1:{free_port()}" for _ in range(2))
    processes = [_start(home, "node", "--port", node.rsplit(":", 1)[1], "--config",
                        str(config))]
    try:
        processes.append(_start(home, "edge", "--port", edge.rsplit(":", 1)[1], "--config",
                                str(config), "--node", node))
        _wait_node_up(edge, processes[1])
        key = cli(home, "keys", "create", "--name", "app").stdout.strip().splitlines()[-1]
        with anthropic.Anthropic(api_key=key, base_url=edge + "/v1/infer",
                                 max_retries=0) as sdk:
            sdk.messages.create(model=MODEL, max_tokens=20, messages=HI)
        assert httpx.get(node + "/metrics").status_code == 401
        at_node = scrape(node, TOKEN)
        at_edge = scrape(edge, TOKEN)
    finally:
        for process in processes:
            stop(process)
    route = "/v1/infer/v1/messages"
    assert sample(at_node, "b3os_requests_total", model=MODEL, route=route, status="200",
                  finish_reason="end") == 1
    assert sample(at_node, "b3os_generation_tokens_total", model=MODEL) == 3
    # the edge forwards: it counts the request, the node knows how it finished
    assert sample(at_edge, "b3os_requests_total", model=MODEL, route=route, status="200",
                  finish_reason="none") == 1
    assert sample(at_edge, "b3os_edge_node_up", node=node) == 1
    assert sample(at_edge, "b3os_generation_tokens_total", model=MODEL) == 0


def test_a_served_process_exports_its_spans_over_otlp_when_the_endpoint_is_set(served):
    with anthropic.Anthropic(api_key=served.key, base_url=served.root + "/v1/infer",
                             max_retries=0) as sdk:
        raw = sdk.messages.with_raw_response.create(model=MODEL, max_tokens=20, messages=HI)
    rid, message = raw.headers["request-id"], raw.parse()

    def mine() -> list:
        return [(service, span) for service, span in list(_Collector.spans)
                if {a.key: _value(a) for a in span.attributes}.get("b3os.request.id") == rid]

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(mine()) < 5:   # exported in batches
        time.sleep(0.1)
    spans = mine()
    assert {service["service.name"] for service, _ in spans} == {"b3os-live-test"}
    named = {span.name: {a.key: _value(a) for a in span.attributes} for _, span in spans}
    assert set(named) == {"POST /v1/infer/v1/messages", f"chat {MODEL}", "queue", "prefill",
                          "decode"}
    chat = named[f"chat {MODEL}"]
    assert (chat["gen_ai.provider.name"], chat["gen_ai.response.id"],
            chat["gen_ai.response.finish_reasons"], chat["gen_ai.usage.output_tokens"],
            chat["gen_ai.usage.cache_read.input_tokens"]) == \
        ("anthropic", message.id, ("end",), message.usage.output_tokens, 4)
