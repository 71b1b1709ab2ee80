"""One process (`serve`): scopes, body size, limits, queue and ledger through the SDKs."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.storage.usage import UsageLedger
from support.servers import cli, free_port, start_server, stop, wait_healthy

MODEL = "b3os/smollm2-135m-instruct"
CONFIG = """
[engine]
parallel = 2
[edge]
max_body_bytes = 4000
[limits.default]
requests_per_minute = 2
input_tokens_per_minute = 100000
output_tokens_per_minute = 2000
[concurrency.default]
running = 1
waiting = 1
"""
HI = [{"role": "user", "content": "Reply with one word: yes"}]


@dataclass
class Edge:
    home: Path
    base_url: str

    def key(self, *options: str) -> str:
        made = cli(self.home, "keys", "create", "--name", "t", *options)
        return made.stdout.strip().splitlines()[-1]

    def anthropic(self, key: str) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key=key, base_url=self.base_url, max_retries=0)

    def openai(self, key: str) -> openai.OpenAI:
        return openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=0)


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    home = tmp_path_factory.mktemp("edge")
    config = home / "b3os.toml"
    config.write_text(CONFIG)
    cli(home, "keys", "create", "--name", "first")
    port = free_port()
    process = start_server(home, port, "--config", str(config))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield Edge(home, root + "/v1/infer")
    finally:
        stop(process)


def test_requests_limit_headers_then_429_with_retry_after(edge):
    with edge.anthropic(edge.key()) as client:
        remaining = []
        for _ in range(2):
            raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=1,
                                                           messages=HI)
            remaining.append(raw.headers["anthropic-ratelimit-requests-remaining"])
            assert raw.headers["anthropic-ratelimit-tokens-limit"] == "2000"
            assert raw.headers["anthropic-ratelimit-input-tokens-reset"].endswith("Z")
        assert remaining == ["1", "0"]
        with pytest.raises(anthropic.RateLimitError) as refused:
            client.messages.create(model=MODEL, max_tokens=3, messages=HI)
    response = refused.value.response
    assert 1 <= int(response.headers["retry-after"]) <= 30
    assert response.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert refused.value.body["error"]["type"] == "rate_limit_error"


def test_headers_on_streams_and_openai_routes(edge):
    key = edge.key()
    with edge.anthropic(key) as client, client.messages.with_streaming_response.create(
            model=MODEL, max_tokens=3, messages=HI, stream=True) as streamed:
        assert streamed.headers["anthropic-ratelimit-requests-remaining"] == "1"
        assert "message_stop" in streamed.read().decode()
    with edge.openai(key) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=3, messages=HI, stream=True)
        assert raw.headers["x-ratelimit-remaining-requests"] == "0"
        assert raw.headers["x-ratelimit-limit-tokens"] == "2000"
        assert raw.headers["x-ratelimit-reset-requests"].endswith("s")
        for _ in raw.parse():
            pass


def test_count_tokens_is_free(edge):
    with edge.anthropic(edge.key()) as client:
        for _ in range(5):
            assert client.messages.count_tokens(model=MODEL, messages=HI).input_tokens > 0
        raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=3, messages=HI)
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "1"


def test_unused_output_is_given_back(edge):
    with edge.anthropic(edge.key()) as client:
        first = client.messages.create(model=MODEL, max_tokens=1500, messages=HI,
                                       extra_body={"temperature": 0})
        # Without the refund, 1500 more would not fit in 2000 per minute.
        raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=1500,
                                                       messages=HI)
    remaining = int(raw.headers["anthropic-ratelimit-output-tokens-remaining"])
    assert remaining >= 2000 - first.usage.output_tokens - 1500


def test_scopes_model_allow_list_and_expiry(edge):
    with edge.anthropic(edge.key("--scope", "models:read")) as client:
        assert client.models.list().data
        with pytest.raises(anthropic.PermissionDeniedError) as denied:
            client.messages.create(model=MODEL, max_tokens=3, messages=HI)
    assert denied.value.body["b3os"]["code"] == "missing_scope"
    only_other = edge.key("--model", "someone/else")
    with edge.anthropic(only_other) as client, \
            pytest.raises(anthropic.PermissionDeniedError) as denied:
        client.messages.create(model=MODEL, max_tokens=3, messages=HI)
    assert denied.value.body["b3os"] == {"code": "model_not_allowed", "param": "model"}
    with edge.openai(only_other) as client, pytest.raises(openai.PermissionDeniedError) as oa:
        client.chat.completions.create(model=MODEL, max_tokens=3, messages=HI)
    assert oa.value.code == "model_not_allowed"
    with edge.anthropic(edge.key("--expires", "2020-01-01")) as client, \
            pytest.raises(anthropic.AuthenticationError, match="expired"):
        client.messages.create(model=MODEL, max_tokens=3, messages=HI)


def test_body_over_the_limit_is_413_in_each_shape(edge):
    key = edge.key()
    big = [{"role": "user", "content": "x" * 5000}]
    with edge.anthropic(key) as client, pytest.raises(anthropic.APIStatusError) as refused:
        client.messages.create(model=MODEL, max_tokens=3, messages=big)
    assert refused.value.status_code == 413
    assert refused.value.body["error"]["type"] == "request_too_large"
    with edge.openai(key) as client, pytest.raises(openai.APIStatusError) as oa:
        client.chat.completions.create(model=MODEL, max_tokens=3, messages=big)
    assert oa.value.status_code == 413 and oa.value.code == "request_too_large"


def wait_for_queue(edge: Edge, expected: dict[str, int]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queues = httpx.get(edge.base_url[:-len("/v1/infer")] + "/healthz").json()["queues"]
        if queues.get(MODEL) == expected:
            return
        time.sleep(0.05)
    raise AssertionError(f"the queue never reached {expected}: {queues}")


def test_queue_full_is_529_and_503_on_openai(edge):
    long = {"model": MODEL, "max_tokens": 1500, "stream": True, "temperature": 0,
            "messages": [{"role": "user", "content": "Count from 1 to 1000, one per line."},
                         {"role": "assistant", "content": "1\n2\n3\n4\n5\n6\n7\n8\n"}]}
    keys = [edge.key() for _ in range(4)]
    waited: list[Any] = []

    def wait_in_queue() -> None:
        with edge.anthropic(keys[1]) as client:
            waited.append(client.messages.create(model=MODEL, max_tokens=3, messages=HI))

    with httpx.stream("POST", edge.base_url + "/v1/messages", json=long, timeout=60,
                      headers={"x-api-key": keys[0]}) as running:
        assert running.status_code == 200, running.read()
        lines = running.iter_lines()        # kept: dropping it would close the stream
        next(lines)                         # admitted: it holds the one slot
        waiter = threading.Thread(target=wait_in_queue)
        waiter.start()
        wait_for_queue(edge, {"running": 1, "waiting": 1})
        with edge.anthropic(keys[2]) as client, \
                pytest.raises(anthropic.OverloadedError) as busy:
            client.messages.create(model=MODEL, max_tokens=3, messages=HI)
        assert busy.value.response.headers["retry-after"] == "1"
        with edge.openai(keys[3]) as client, \
                pytest.raises(openai.InternalServerError) as oa:
            client.chat.completions.create(model=MODEL, max_tokens=3, messages=HI)
        assert oa.value.status_code == 503 and oa.value.code == "model_busy"
        assert not waited, "the waiting request ran while the slot was held"
    waiter.join(timeout=60)
    assert waited and waited[0].usage.output_tokens > 0


def test_ledger_survives_a_kill_and_usage_prints_totals(tmp_path):
    key = cli(tmp_path, "keys", "create", "--name", "ledger").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(tmp_path, port)
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        with anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer",
                                 max_retries=0) as client:
            raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=4,
                                                           messages=HI)
            with pytest.raises(anthropic.NotFoundError):
                client.messages.create(model="claude-x", max_tokens=4, messages=HI)
    finally:
        process.send_signal(signal.SIGKILL)
        stop(process)
    message = json.loads(raw.http_response.text)
    rows = UsageLedger(KeyStore(tmp_path / "b3os.sqlite3").engine).rows()
    ok = next(r for r in rows if r.request_id == raw.headers["request-id"])
    assert (ok.model, ok.route, ok.status) == (MODEL, "POST /v1/messages", 200)
    assert ok.input_tokens == message["usage"]["input_tokens"]
    assert ok.output_tokens == message["usage"]["output_tokens"] and ok.latency_ms > 0
    assert any(r.status == 404 and r.model == "claude-x" for r in rows)
    printed = cli(tmp_path, "usage").stdout
    line = next(li for li in printed.splitlines() if MODEL in li)
    assert "ledger" in line and line.split()[3:5] == ["1", "0"]
