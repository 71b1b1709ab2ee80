"""The Redis buckets on a real redis-server: same arithmetic, one budget for all."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from b3os_infer.config import ModelLimits
from b3os_infer.edge.admission.redis_limits import RedisLimiter
from b3os_infer.errors import Overloaded
from support.edge import redis_server

LIMITS = ModelLimits(requests_per_minute=10, input_tokens_per_minute=100,
                     output_tokens_per_minute=60)


@pytest.fixture(scope="module")
def redis_url():
    with redis_server() as url:
        yield url


def test_two_limiters_share_one_budget_atomically(redis_url):
    key = secrets.token_hex(4)

    async def scenario():
        one, two = RedisLimiter(redis_url), RedisLimiter(redis_url)
        try:
            # 20 concurrent requests from two "replicas" for a budget of 10
            decisions = await asyncio.gather(*(
                (one if i % 2 else two).take(key, "m", LIMITS, (1, 1, 1)) for i in range(20)))
            snap = await one.peek(key, "m", LIMITS)
        finally:
            await one.close()
            await two.close()
        return decisions, snap

    decisions, snap = asyncio.run(scenario())
    assert sum(d.allowed for d in decisions) == 10
    refused = [d for d in decisions if not d.allowed]
    assert all(0 < d.retry_after <= 6.5 for d in refused)
    assert snap.buckets["requests"].remaining == 0
    assert snap.buckets["input_tokens"].remaining == 90


def _take_then_give_back_twice(redis_url, amounts, first, second):
    """Take ``amounts`` on a fresh key, then give back ``first`` and ``second`` (output
    tokens, input tokens), peeking after each: (the take's decision, after, after)."""
    key = secrets.token_hex(4)

    async def scenario():
        limiter = RedisLimiter(redis_url)
        try:
            taken = await limiter.take(key, "m", LIMITS, amounts)
            await limiter.give_back(key, "m", LIMITS, first[0], input_tokens=first[1])
            after = await limiter.peek(key, "m", LIMITS)
            await limiter.give_back(key, "m", LIMITS, second[0], input_tokens=second[1])
            full = await limiter.peek(key, "m", LIMITS)
        finally:
            await limiter.close()
        return taken, after, full

    return asyncio.run(scenario())


def test_give_back_and_never_over_capacity(redis_url):
    taken, after, full = _take_then_give_back_twice(redis_url, (1, 10, 50), (45, 0), (1000, 0))
    assert taken.allowed and taken.snapshot.buckets["output_tokens"].remaining == 10
    assert 55 <= after.buckets["output_tokens"].remaining <= 56
    assert full.buckets["output_tokens"].remaining == 60


def test_give_back_of_cached_input_and_never_over_capacity(redis_url):
    taken, after, full = _take_then_give_back_twice(redis_url, (1, 90, 50), (40, 80), (0, 1000))
    assert taken.allowed and taken.snapshot.buckets["input_tokens"].remaining == 10
    assert 90 <= after.buckets["input_tokens"].remaining <= 91
    assert 50 <= after.buckets["output_tokens"].remaining <= 51
    assert full.buckets["input_tokens"].remaining == 100
    assert full.buckets["requests"].remaining <= 10


def test_unreachable_redis_is_a_clear_overloaded_error():
    async def scenario():
        limiter = RedisLimiter("redis://127.0.0.1:1/0")
        try:
            await limiter.take("k", "m", LIMITS, (1, 1, 1))
        finally:
            await limiter.close()

    with pytest.raises(Overloaded, match="rate-limit store is unreachable"):
        asyncio.run(scenario())
