"""The lanes and the prefix caches of the embedded engine, on the real default model."""

from __future__ import annotations

import asyncio
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from b3os_infer.config import EngineConfig, LlamacppModel
from b3os_infer.core import ChatRequest, Message, Sampling, TextPart
from b3os_infer.engine.base import Admitted, GenerationDone, GenerationRequest, TokenEvent
from b3os_infer.engine.llamacpp import LlamaCppEngine, LlamaCppSettings, contexts
from b3os_infer.engine.llamacpp.disk_cache import MAGIC, _read_header
from b3os_infer.engine.memory_plan import KvBudget
from b3os_infer.node.cards import default_model_path
from b3os_infer.node.chat_model import ChatModel
from support.engines import loaded_gguf, loading_gguf

# long enough to take several 512-token prefill steps
DOCUMENT = " ".join(f"Clause {i}: the tenant keeps the lantern lit on night {i}."
                    for i in range(100))


def llama(chat: Any) -> LlamaCppEngine:
    """The model's engine, which these tests read llama.cpp's own state from."""
    assert isinstance(chat.engine, LlamaCppEngine)
    return chat.engine


def engine_config(**overrides: Any) -> EngineConfig:
    return EngineConfig(**{"parallel": 4, "prefix_cache_min_tokens": 512, **overrides})


def load(cache_dir: Path | None, **overrides: Any) -> ChatModel:
    return loaded_gguf(LlamacppModel(context_window=8192), engine_config(**overrides),
                       b"test-secret", cache_dir=cache_dir)


async def loading(cache_dir: Path | None, **overrides: Any) -> ChatModel:
    return await loading_gguf(LlamacppModel(context_window=8192), engine_config(**overrides),
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
        while not 0 < model.engine.cache_stats()["prefill_left"] <= len(tokens) // 2:
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


def lanes_model() -> ChatModel:
    """4 short slots of 2,304 tokens and one of the whole 8,192 (the budget allows no more)."""
    return loaded_gguf(LlamacppModel(context_window=8192),
                           engine_config(kv_memory_mib=400, long_slots=1), b"test-secret")


def test_a_small_budget_gives_short_slots_and_a_long_one():
    chat = lanes_model()
    try:
        plan = llama(chat).plan
        assert [(lane.slots, lane.window) for lane in plan.lanes] == [(4, 2304), (1, 8192)]
        assert llama(chat).kv_usage().capacity == 4 * 2304 + 8192
    finally:
        asyncio.run(chat.engine.close())


def test_a_budget_without_a_whole_window_serves_a_shorter_one_and_the_card_says_so(caplog):
    """100 MiB holds 4,551 tokens of SmolLM2's KV: one slot of 4,352 instead of 8,192."""
    caplog.set_level("INFO", logger="b3os_infer.engine.llamacpp")
    chat = loaded_gguf(LlamacppModel(context_window=8192), engine_config(kv_memory_mib=100),
                           b"test-secret")
    try:
        assert [(lane.slots, lane.window) for lane in llama(chat).plan.lanes] == [(1, 4352)]
        assert chat.engine.info.context_window == chat.card.context_window == 4352
        assert chat.card.max_output_tokens == 2176 and chat.card.device == "cpu"
    finally:
        asyncio.run(chat.engine.close())
    assert "KV plan: 1 slot, 1 x 4,352 tokens, 96 MiB of KV (f16; kv_memory_mib = 100, " \
           "model on cpu)" in caplog.text
    assert "no whole 8192-token window: the model is served with 4352" in caplog.text


def test_a_share_of_the_memory_available_less_the_model_file_sizes_the_lanes(caplog):
    """A quarter of 1 GiB less the 94 MiB GGUF: 10,584 tokens of SmolLM2's KV, one whole
    8,192-token window and one short slot of 2,304."""
    caplog.set_level("INFO", logger="b3os_infer.engine.llamacpp")
    engine = LlamaCppEngine(LlamaCppSettings(
        str(default_model_path()), parallel=4, long_slots=1, context_window=8192,
        kv_budget=KvBudget(share=0.25), memory_bytes=1 << 30))
    try:
        assert [(lane.slots, lane.window) for lane in engine.plan.lanes] == [(1, 2304),
                                                                             (1, 8192)]
    finally:
        asyncio.run(engine.close())
    assert ('kv_memory = "25%" of 1,024 MiB available less the weights\' 94 MiB = 233 MiB'
            in caplog.text)


def test_gpu_layers_on_a_build_without_a_gpu_backend_serve_on_the_cpu_and_say_why(caplog):
    caplog.set_level("INFO", logger="b3os_infer.engine.llamacpp")
    chat = loaded_gguf(LlamacppModel(context_window=2048),
                           engine_config(kv_memory_mib=100, gpu_layers=20), b"test-secret")
    try:
        assert chat.card.device == chat.engine.info.device == "cpu"
    finally:
        asyncio.run(chat.engine.close())
    assert "gpu_layers = 20, but this llama.cpp build has no GPU backend" in caplog.text


def test_auto_flash_attention_is_off_on_the_cpus_short_lanes_and_on_past_8192(monkeypatch):
    monkeypatch.setattr(contexts, "UNTILED_UP_TO", 4096)
    chat = lanes_model()
    try:
        assert [lane.flash_attention for lane in llama(chat).lanes] == [False, True]
    finally:
        asyncio.run(chat.engine.close())


@pytest.mark.parametrize("untiled_up_to", [8192, 4096], ids=["same V layout",
                                                            "V transposed on the way"])
def test_a_reply_that_outgrows_the_short_lane_moves_to_the_long_one_and_goes_on(
        caplog, monkeypatch, untiled_up_to):
    """1,200 prompt tokens and max_tokens 1,500 start in a 2,304-token slot (the lane
    leaves 1,024 tokens of room to answer); the reply crosses its end and continues, also
    into a long lane with flash attention from a short one without it."""
    monkeypatch.setattr(contexts, "UNTILED_UP_TO", untiled_up_to)
    chat = lanes_model()
    tokens = prompt(chat, f"Copy this text. {DOCUMENT[:3900]}")
    assert 1000 < len(tokens) < 1270
    never_end = Sampling(temperature=0, logit_bias=((llama(chat).eos_token_id, -100.0),))
    request = GenerationRequest(tokens, max_tokens=1500, sampling=never_end)

    async def run() -> tuple[str, Admitted | None, GenerationDone | None]:
        await chat.engine.start()
        try:
            return await collect(chat.engine, request)
        finally:
            await chat.engine.close()

    caplog.set_level("INFO", logger="b3os_infer.engine.llamacpp")
    _, _, done = asyncio.run(run())
    assert done is not None and done.reason == "length"
    assert done.generated_tokens == 1500
    assert any("from lane 0 to lane 1" in r.getMessage() for r in caplog.records)


async def run_once(cache_dir: Path, tokens_of, **overrides: Any
                   ) -> tuple[Admitted | None, dict[str, int]]:
    """A fresh engine on ``cache_dir``: one request, then closed (its disk writes done)."""
    chat = await loading(cache_dir, **overrides)
    try:
        stats = llama(chat).cache_stats()
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


def test_a_prefix_saved_with_flash_attention_loads_into_a_lane_without_it_and_back(tmp_path):
    """V is a row per cell with flash attention and transposed without it: the saved
    state is rewritten for the lane that loads it."""
    def tokens_of(chat: ChatModel) -> list[int]:
        return prompt(chat, "Which clause mentions night 3?", system=DOCUMENT[:3000])

    asyncio.run(run_once(tmp_path, tokens_of, flash_attention="on"))
    without, stats = asyncio.run(run_once(tmp_path, tokens_of, flash_attention="off"))
    assert stats["disk_files"] == 1
    assert without is not None and without.cached_tokens == without.prompt_tokens - 1
    again, _ = asyncio.run(run_once(tmp_path, tokens_of, flash_attention="on"))
    assert again is not None and again.cached_tokens == again.prompt_tokens - 1


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


def test_a_whole_file_that_llama_cpp_refuses_is_deleted_and_the_prompt_computed_again(
        tmp_path):
    """A file whose header and checksum are right but whose state llama.cpp does not take
    (its magic number changed, the CRC made to match), tried for a slot that already held
    the prompt's first tokens: the failed load emptied the slot, so the prompt is computed
    from the start and the reply is the one a fresh engine gives."""
    def long_prompt(chat: ChatModel) -> list[int]:
        return prompt(chat, "Which clause mentions night 6?", system=DOCUMENT[:3000])

    async def replies(*prompts_of) -> list[tuple[str, Admitted | None]]:
        chat = await loading(tmp_path, parallel=1)   # one slot: every request lands in it
        try:
            out = []
            for prompt_of in prompts_of:
                text, admitted, _ = await collect(chat.engine, greedy(prompt_of(chat), 8))
                out.append((text, admitted))
            return out
        finally:
            await chat.engine.close()

    [(fresh, _)] = asyncio.run(replies(long_prompt))
    [path] = tmp_path.glob("*/*.kv")
    header, tokens, offset = _read_header(path)
    data = path.read_bytes()
    state = b"\0\0\0\0" + data[offset + 4:]   # llama.cpp's magic at the start, gone
    forged = {**header, "crc32": zlib.crc32(state)}
    raw = json.dumps(forged).encode()
    path.write_bytes(MAGIC + struct.pack("<I", len(raw)) + raw
                     + struct.pack(f"<{len(tokens)}i", *tokens) + state)

    def short_prompt(chat: ChatModel) -> list[int]:
        # shares the template's start and the document's first words with the long one:
        # too little to load a file for, so the slot holds them when the long one comes
        return prompt(chat, "Which clause?", system=DOCUMENT[:300])

    _, (again, admitted) = asyncio.run(replies(short_prompt, long_prompt))
    assert admitted is not None and admitted.cached_tokens == 0
    assert again == fresh
    [rewritten] = tmp_path.glob("*/*.kv")   # deleted, then saved again from the new run
    assert _read_header(rewritten)[0]["crc32"] != forged["crc32"]
