"""The edge's parts on their own: buckets, headers, body limit, config, keys, ledger."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from b3os_infer.config import ConfigError, ModelLimits, load_config
from b3os_infer.core import Usage
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.admission.limits import LimitsConfig, MemoryLimiter
from b3os_infer.edge.admission.metering import EdgeAccounting
from b3os_infer.edge.admission.queue import QueueConfig, Queues
from b3os_infer.edge.admission.ratelimit_headers import anthropic_headers, openai_headers
from b3os_infer.edge.body import read_body, replay, requested_model
from b3os_infer.edge.build import concurrency as edge_concurrency
from b3os_infer.edge.build import expiry
from b3os_infer.edge.build import limits as edge_limits
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.usage import UsageLedger, UsageRow
from b3os_infer.errors import Overloaded, RateLimited, RequestTooLarge

LIMITS = ModelLimits(requests_per_minute=2, input_tokens_per_minute=100,
                     output_tokens_per_minute=60)


def test_buckets_take_refuse_with_a_wait_and_refill():
    limiter = MemoryLimiter()
    first = asyncio.run(limiter.take("k", "m", LIMITS, (1, 40, 30)))
    assert first.allowed
    assert first.snapshot.buckets["input_tokens"].remaining == 60
    assert first.snapshot.buckets["output_tokens"].remaining == 30
    refused = asyncio.run(limiter.take("k", "m", LIMITS, (1, 40, 40)))
    assert not refused.allowed
    # 10 output tokens short at 1 token/s (60 per minute)
    assert 9 < refused.retry_after <= 10
    other_key = asyncio.run(limiter.take("other", "m", LIMITS, (1, 40, 40)))
    assert other_key.allowed


def test_give_back_returns_unused_output_without_overflowing():
    limiter = MemoryLimiter()
    asyncio.run(limiter.take("k", "m", LIMITS, (1, 0, 60)))
    asyncio.run(limiter.give_back("k", "m", LIMITS, 500))
    snap = asyncio.run(limiter.peek("k", "m", LIMITS))
    assert snap.buckets["output_tokens"].remaining == 60


def test_give_back_returns_input_too_without_overflowing():
    limiter = MemoryLimiter()
    asyncio.run(limiter.take("k", "m", LIMITS, (1, 90, 10)))
    asyncio.run(limiter.give_back("k", "m", LIMITS, 0, input_tokens=80))
    snap = asyncio.run(limiter.peek("k", "m", LIMITS))
    assert 90 <= snap.buckets["input_tokens"].remaining <= 91
    assert snap.buckets["output_tokens"].remaining == 50
    asyncio.run(limiter.give_back("k", "m", LIMITS, 10, input_tokens=500))
    snap = asyncio.run(limiter.peek("k", "m", LIMITS))
    assert snap.buckets["input_tokens"].remaining == 100
    assert snap.buckets["output_tokens"].remaining == 60


def test_headers_in_each_apis_style():
    snap = asyncio.run(MemoryLimiter().take("k", "m", LIMITS, (1, 50, 6))).snapshot
    anthropic = anthropic_headers(snap)
    assert anthropic["anthropic-ratelimit-requests-limit"] == "2"
    assert anthropic["anthropic-ratelimit-requests-remaining"] == "1"
    assert anthropic["anthropic-ratelimit-input-tokens-remaining"] == "50"
    # tokens: the tighter of input (50/100 left) and output (54/60 left)
    assert anthropic["anthropic-ratelimit-tokens-limit"] == "100"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
                        anthropic["anthropic-ratelimit-output-tokens-reset"])
    openai = openai_headers(snap)
    assert openai["x-ratelimit-remaining-requests"] == "1"
    assert openai["x-ratelimit-reset-requests"] == "30s"
    assert openai["x-ratelimit-reset-output-tokens"] == "6s"


def _receive(chunks):
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    return receive


def test_body_limit_while_reading_and_by_content_length():
    scope = {"type": "http", "headers": []}
    assert asyncio.run(read_body(scope, _receive([b"ab", b"cd"]), 4)) == b"abcd"
    with pytest.raises(RequestTooLarge):
        asyncio.run(read_body(scope, _receive([b"ab", b"cd", b"e"]), 4))
    declared = {"type": "http", "headers": [(b"content-length", b"5")]}
    with pytest.raises(RequestTooLarge):
        asyncio.run(read_body(declared, _receive([]), 4))


def test_replay_and_requested_model():
    async def again():
        receive = replay(b'{"model": "m"}', _receive([]))
        return await receive(), await receive()

    first, second = asyncio.run(again())
    assert first["body"] == b'{"model": "m"}' and second["type"] == "http.disconnect"
    assert requested_model("/v1/infer/v1/messages", b'{"model": "a/b"}') == "a/b"
    assert requested_model("/v1/infer/models/a/b", b"") == "a/b"
    assert requested_model("/v1/infer/chat/completions", b"not json") is None


def test_limits_and_concurrency_tables(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[limits.default]\nrequests_per_minute = 600\n'
                    '[limits."b3os/smollm2-135m-instruct"]\nrequests_per_minute = 60\n'
                    '[concurrency.default]\nrunning = 2\n[edge]\nmax_body_bytes = 1000\n')
    config = load_config(path)
    model = edge_limits(config).for_model("b3os/smollm2-135m-instruct")
    assert model.requests_per_minute == 60
    assert model.output_tokens_per_minute == 80_000
    assert edge_limits(config).for_model("other").requests_per_minute == 600
    assert edge_concurrency(config).for_model("x").running == 2
    assert config.edge.max_body_bytes == 1000
    for bad, word in [('[limits.default]\nrequests_per_minit = 1\n', "requests_per_minit"),
                      ('[limits.default]\nrequests_per_minute = 0\n', ">= 1"),
                      ('[concurrency.default]\nrunning = "x"\n', "running")]:
        path.write_text(bad)
        with pytest.raises(ConfigError, match=word):
            load_config(path)


def test_keys_with_models_and_expiry(tmp_path):
    store = KeyStore(tmp_path / "k.sqlite3")
    record, key = store.create("a", ("infer",), models=("m1",), expires_at=expiry("30d"))
    verified = store.verify(key)
    assert verified.allows_model("m1") and not verified.allows_model("m2")
    assert not verified.expired()
    _, old = store.create("b", expires_at=expiry("2020-01-01"))
    assert store.verify(old).expired()
    assert next(r for r in store.list() if r.id == record.id).models == ("m1",)
    with pytest.raises(ValueError, match="30d"):
        expiry("soon")


def test_ledger_totals_per_key_and_model(tmp_path):
    store = KeyStore(tmp_path / "k.sqlite3")
    ledger = UsageLedger(store.engine)
    for status, tokens in [(200, 10), (200, 5), (429, 0)]:
        ledger.record(UsageRow("req_x", "k1", "m", "POST /v1/messages", status, tokens, 3,
                               1, 12.5))
    ledger.record(UsageRow("req_y", "k2", "m", "POST /chat/completions", 200, 7, 2, 0, 1.0))
    (first, second) = ledger.totals()
    assert (first.key_id, first.requests, first.errors, first.input_tokens,
            first.output_tokens, first.cached_tokens) == ("k1", 3, 1, 15, 9, 3)
    assert (second.key_id, second.requests, second.input_tokens) == ("k2", 1, 7)


def _accounting(tmp_path, limits=None, running=1, waiting=0):
    store = KeyStore(tmp_path / "k.sqlite3")
    record, _ = store.create("a")
    edge = EdgeState.for_keys(store, limits=limits or LimitsConfig(),
                              queues=Queues(QueueConfig({"running": running,
                                                         "waiting": waiting})))
    return edge, record


def test_admission_raises_and_settle_refunds(tmp_path):
    limits = LimitsConfig({"requests_per_minute": 5, "output_tokens_per_minute": 100})
    edge, key = _accounting(tmp_path, limits)

    async def scenario():
        first = EdgeAccounting(edge, key)
        await first.admit("m", 10, 80)
        await first.settle("m", Usage(input_tokens=10, output_tokens=5))
        second = EdgeAccounting(edge, key)
        await second.admit("m", 10, 80)   # fits only because 75 came back
        with pytest.raises(Overloaded):   # one running, none may wait
            await EdgeAccounting(edge, key).admit("m", 1, 1)
        await second.settle("m", None)
        with pytest.raises(RateLimited) as never:
            await EdgeAccounting(edge, key).admit("m", 1, 101)
        assert never.value.retryable is False
        return second.snapshot

    snap = asyncio.run(scenario())
    assert snap.buckets["output_tokens"].remaining <= 100 - 5 - 80 + 2


def test_settle_gives_back_the_prompt_tokens_read_from_cache(tmp_path):
    # 6,000 input tokens a minute: 100 a second of refill, far below what is given back
    limits = LimitsConfig({"input_tokens_per_minute": 6000})
    edge, key = _accounting(tmp_path, limits)
    model_limits = limits.for_model("m")

    async def scenario():
        levels = {}
        for model, cached in (("none", 0), ("cached", 4500), ("over", 9999)):
            accounting = EdgeAccounting(edge, key)
            await accounting.admit(model, 5000, 10)
            await accounting.settle(model, Usage(input_tokens=5000 - min(cached, 5000),
                                                 output_tokens=10, cached_tokens=cached))
        for model in ("none", "cached", "over"):
            snap = await edge.limiter.peek(key.id, model, model_limits)
            levels[model] = snap.buckets["input_tokens"].remaining
        return levels

    levels = asyncio.run(scenario())
    assert 1000 <= levels["none"] <= 1010
    assert levels["cached"] - levels["none"] in (4499, 4500, 4501)
    # never more than the admission took, never above the bucket's capacity
    assert levels["over"] == 6000


def test_mostly_cached_requests_keep_being_admitted(tmp_path):
    limits = LimitsConfig({"input_tokens_per_minute": 60_000})
    edge, key = _accounting(tmp_path, limits)

    async def requests(model: str, cached: int) -> int:
        admitted = 0
        for _ in range(20):
            accounting = EdgeAccounting(edge, key)
            try:
                await accounting.admit(model, 20_000, 10)
            except RateLimited:
                break
            admitted += 1
            await accounting.settle(model, Usage(input_tokens=20_000 - cached,
                                                 output_tokens=10, cached_tokens=cached))
        return admitted

    assert asyncio.run(requests("uncached", 0)) == 3
    assert asyncio.run(requests("cached", 19_800)) == 20


def test_queue_lets_one_wait_and_admits_it_when_a_slot_frees(tmp_path):
    edge, key = _accounting(tmp_path, running=1, waiting=1)

    async def scenario():
        running = EdgeAccounting(edge, key)
        await running.admit("m", 1, 1)
        waiter = asyncio.ensure_future(EdgeAccounting(edge, key).admit("m", 1, 1))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        with pytest.raises(Overloaded) as busy:
            await EdgeAccounting(edge, key).admit("m", 1, 1)
        assert busy.value.retry_after == 1
        began = time.monotonic()
        await running.settle("m", Usage())
        await waiter
        return time.monotonic() - began

    assert asyncio.run(scenario()) < 1
