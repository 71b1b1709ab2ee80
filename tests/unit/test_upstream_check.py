"""A node whose upstream engine does not serve the configured name or window says so: at
start, in /healthz, and as a 503 naming the reason on each request, never a 500 per request."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from b3os_infer.engine.base import GenerationRequest
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.engine.upstream.check import (
    PROBE_TEXT,
    Mismatch,
    listing_mismatch,
    tokenizer_mismatch,
)
from b3os_infer.engine.upstream.engine import UpstreamEngine, UpstreamSettings
from b3os_infer.errors import EngineUnavailable
from b3os_infer.node.registry import _state

URL = "http://gpu1:8000"
VLLM_LISTING = {"object": "list", "data": [
    {"id": "Qwen/Qwen3-32B", "object": "model", "max_model_len": 32768}]}


def test_a_listed_name_with_a_window_as_long_as_configured_is_no_mismatch():
    assert listing_mismatch(VLLM_LISTING, URL, "Qwen/Qwen3-32B", 32768) is None
    # an engine that lists no window (llama.cpp's servers) is taken at its word
    assert listing_mismatch({"data": [{"id": "m"}]}, URL, "m", 10**6) is None


def test_a_name_the_engine_does_not_list_is_a_mismatch_that_lists_what_it_serves():
    found = listing_mismatch(VLLM_LISTING, URL, "qwen3", 32768)
    assert found == Mismatch("upstream_model_missing",
                             "the engine at http://gpu1:8000 serves Qwen/Qwen3-32B, not 'qwen3': "
                             "set served_name to the name it lists")


def test_a_window_shorter_than_configured_is_a_mismatch_with_both_numbers():
    found = listing_mismatch(VLLM_LISTING, URL, "Qwen/Qwen3-32B", 131072)
    assert found is not None and found.code == "upstream_window_too_small"
    assert "32,768" in found.message and "131,072" in found.message


def test_a_body_that_is_no_listing_is_a_mismatch():
    found = listing_mismatch(["not", "a", "listing"], URL, "m", 1)
    assert found is not None and found.code == "upstream_listing_unreadable"


def engine_answering(listing: object, status: int = 200) -> UpstreamEngine:
    engine = UpstreamEngine(UpstreamSettings(url=URL, flavour="vllm", served_name="qwen3",
                                             context_window=32768),
                            ScriptedEngine(Script((Reply("x"),))), vocab_size=300)
    engine._client = httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(
        lambda request: httpx.Response(status, json=listing)))
    engine._up = True
    return engine


def test_a_mismatched_engine_is_unhealthy_reports_why_and_refuses_requests_with_a_503():
    engine = engine_answering(VLLM_LISTING)

    async def run() -> None:
        await engine._check_listing()
        with pytest.raises(EngineUnavailable) as refused:
            async for _ in engine.generate(GenerationRequest(prompt=[1, 2], max_tokens=4)):
                pass
        assert refused.value.status == 503 and refused.value.code == "upstream_model_missing"
        assert engine._client is not None
        await engine._client.aclose()

    asyncio.run(run())
    assert engine.healthy() is False
    state = _state(engine)
    assert state["healthy"] is False and "not 'qwen3'" in str(state["problem"])


def test_an_engine_that_comes_to_list_the_name_is_healthy_again():
    engine = engine_answering({"data": [{"id": "qwen3", "max_model_len": 32768}]})
    engine._mismatch = Mismatch("upstream_model_missing", "was missing")

    async def run() -> None:
        await engine._check_listing()
        assert engine._client is not None
        await engine._client.aclose()

    asyncio.run(run())
    assert engine.healthy() is True and engine.problem() is None
    assert "problem" not in _state(engine)


def test_a_tokenizer_that_agrees_or_only_adds_a_leading_begin_token_is_no_mismatch():
    assert tokenizer_mismatch([5, 6, 7], [5, 6, 7], URL) is None
    assert tokenizer_mismatch([1, 5, 6, 7], [5, 6, 7], URL) is None


def test_a_tokenizer_that_splits_otherwise_is_a_mismatch_with_both_counts_and_where():
    found = tokenizer_mismatch([5, 6, 9, 10], [5, 6, 7], URL)
    assert found is not None and found.code == "upstream_tokenizer_mismatch"
    assert "into 4 tokens" in found.message and "into 3" in found.message
    assert "first differing at token 2" in found.message


def engine_tokenizing(tokens: object, status: int = 200) -> UpstreamEngine:
    """A vLLM that lists the model and tokenizes the probe into ``tokens``."""
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/tokenize":
            body = json.loads(request.content)
            assert body == {"model": "qwen3", "prompt": PROBE_TEXT, "add_special_tokens": False}
            return httpx.Response(status, json={"count": 0, "tokens": tokens})
        return httpx.Response(200, json={"data": [{"id": "qwen3", "max_model_len": 32768}]})

    engine = engine_answering({})
    engine._client = httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(answer))
    return engine


def _checked(engine: UpstreamEngine) -> UpstreamEngine:
    async def run() -> None:
        await engine._check_listing()
        assert engine._client is not None
        await engine._client.aclose()

    asyncio.run(run())
    return engine


def test_an_engine_that_tokenizes_the_probe_otherwise_is_unhealthy_and_says_why():
    engine = _checked(engine_tokenizing([1, 2, 3]))
    assert engine.healthy() is False
    assert "tokenizes a probe text into 3 tokens" in str(_state(engine)["problem"])


def test_an_engine_that_tokenizes_the_probe_alike_or_cannot_tokenize_is_healthy():
    ours = engine_answering({}).tokenize(PROBE_TEXT, add_special=False)
    assert _checked(engine_tokenizing(ours)).healthy() is True
    assert _checked(engine_tokenizing(None, status=404)).healthy() is True
