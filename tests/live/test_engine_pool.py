"""The KV pool and the prefix caches of the embedded engine, on the real default model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from b3os_infer.compose import load_gguf_model
from b3os_infer.config import EngineConfig, ModelConfig
from b3os_infer.core import ChatRequest, Message, Sampling, TextPart
from b3os_infer.engine.base import Admitted, GenerationDone, GenerationRequest, TokenEvent
from b3os_infer.node.chat import ChatModel

# long enough to take several 512-token prefill steps
DOCUMENT = " ".join(f"Clause {i}: the tenant keeps the lantern lit on night {i}."
                    for i in range(100))


def engine_config(**overrides: Any) -> EngineConfig:
    return EngineConfig(**{"parallel": 4, "pool_tokens": 16384, "cached_prefixes": 8,
                           "disk_cache_min_tokens": 512, **overrides})


def load(cache_dir: Path | None, **overrides: Any) -> ChatModel:
    return load_gguf_model(ModelConfig(context_window=8192), engine_config(**overrides),
                           b"test-secret", cache_dir=cache_dir)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    chat = load(tmp_path_factory.mktemp("prefix-cache"))
    asyncio.run(chat.engine.start())
    yield chat
    asyncio.run(chat.engine.close())


def prompt(model: ChatModel, text: str, system: str | None = None) -> list[int]:
    request = ChatRequest(model="m", system=system,
                          messages=[Message("user", [TextPart(text)])])
    return model.prompt(request).tokens


def greedy(tokens: list[int], max_tokens: int = 4) -> GenerationRequest:
    return GenerationRequest(tokens, max_tokens=max_tokens, sampling=Sampling(temperature=0))


async def collect(engine, request) -> tuple[str, Admitted | None, GenerationDone | None]:
    texts, admitted, done = [], None, None
    async for event in engine.generate(request):
        if isinstance(event, TokenEvent):
            texts.append(event.text)
        elif isinstance(event, Admitted):
            admitted = event
        else:
            done = event
    return "".join(texts), admitted, done


def test_a_prefill_cancelled_half_way_leaves_its_tokens_for_the_retry(model):
    tokens = prompt(model, f"{DOCUMENT}\n\nWhich clause mentions night 7?")
    assert len(tokens) > 1500

    async def cancel_then_retry() -> Admitted | None:
        task = asyncio.ensure_future(collect(model.engine, greedy(tokens)))
        while not 0 < model.engine.pool_stats()["prefill_left"] <= len(tokens) // 2:
            await asyncio.sleep(0.02)
        task.cancel()
        while model.engine.load()["active"]:
            await asyncio.sleep(0.02)
        _, admitted, _ = await collect(model.engine, greedy(tokens))
        return admitted

    admitted = asyncio.run(cancel_then_retry())
    assert admitted is not None
    assert admitted.cached_tokens >= len(tokens) // 2, "the half computed before the cancel"
    assert admitted.cached_tokens < len(tokens) - 1, "the rest was computed on the retry"


def test_two_conversations_with_the_same_long_system_prompt_share_it(model):
    first = prompt(model, "Which clause mentions night 3?", system=DOCUMENT)
    second = prompt(model, "Summarise the lease in one line.", system=DOCUMENT)
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert shared > 1500
    asyncio.run(collect(model.engine, greedy(first)))
    _, admitted, done = asyncio.run(collect(model.engine, greedy(second)))
    assert admitted is not None and done is not None
    assert shared - 8 <= admitted.cached_tokens <= shared
    assert done.cached_tokens == admitted.cached_tokens


def test_a_pool_smaller_than_the_prompts_evicts_old_prefixes_and_answers_all():
    """Six different prompts of about 1,500 tokens through a 4,096-token pool, three at a
    time: parked prefixes are evicted for room, and every request finishes."""
    small = load_gguf_model(ModelConfig(context_window=4096),
                            engine_config(parallel=3, pool_tokens=4096), b"test-secret")
    prompts = [prompt(small, f"Copy {i}. {DOCUMENT[:5400]}") for i in range(6)]
    assert all(1200 < len(p) < 2000 for p in prompts)

    async def all_of_them():
        await small.engine.start()
        try:
            return await asyncio.gather(*(collect(small.engine, greedy(p)) for p in prompts))
        finally:
            await small.engine.close()

    results = asyncio.run(all_of_them())
    assert all(done is not None and done.generated_tokens >= 1 for _, _, done in results)


async def run_once(cache_dir: Path, tokens_of, **overrides: Any
                   ) -> tuple[Admitted | None, dict[str, int]]:
    """A fresh engine on ``cache_dir``: one request, then closed (its disk writes done)."""
    chat = load(cache_dir, **overrides)
    await chat.engine.start()
    try:
        stats = chat.engine.pool_stats()
        _, admitted, _ = await collect(chat.engine, greedy(tokens_of(chat)))
        return admitted, stats
    finally:
        await chat.engine.close()


def test_a_long_prefix_is_reloaded_from_disk_by_a_new_engine(tmp_path):
    def tokens_of(chat: ChatModel) -> list[int]:
        return prompt(chat, "Which clause mentions night 9?", system=DOCUMENT[:3000])

    first, before = asyncio.run(run_once(tmp_path, tokens_of))
    assert first is not None and first.cached_tokens == 0 and before["disk_files"] == 0
    files = list(tmp_path.glob("*/*.kv"))
    assert len(files) == 1
    again, after = asyncio.run(run_once(tmp_path, tokens_of))
    assert after["disk_files"] == 1
    assert again is not None and again.cached_tokens == again.prompt_tokens - 1


def test_a_prefix_saved_with_another_kv_type_is_never_loaded(tmp_path):
    def tokens_of(chat: ChatModel) -> list[int]:
        return prompt(chat, "Which clause mentions night 2?", system=DOCUMENT[:3000])

    asyncio.run(run_once(tmp_path, tokens_of))
    other, stats = asyncio.run(run_once(tmp_path, tokens_of, kv_type="q8_0"))
    assert stats["disk_files"] == 0 and other is not None and other.cached_tokens == 0


def test_a_truncated_prefix_file_is_deleted_and_the_prompt_computed_again(tmp_path):
    def tokens_of(chat: ChatModel) -> list[int]:
        return prompt(chat, "Which clause mentions night 4?", system=DOCUMENT[:3000])

    asyncio.run(run_once(tmp_path, tokens_of))
    [path] = tmp_path.glob("*/*.kv")
    whole = path.stat().st_size
    path.write_bytes(path.read_bytes()[: whole // 2])
    again, stats = asyncio.run(run_once(tmp_path, tokens_of))
    assert stats["disk_files"] == 1, "its header is whole: it is listed until it is read"
    assert again is not None and again.cached_tokens == 0
    assert path.stat().st_size == whole, "deleted, then written again whole"
