"""Draft-free speculative decoding (engine/llamacpp/drafting.py) on the real default model:
what the engine writes with drafting on is what it writes with drafting off — greedy,
token for token up to a near tie that a drafted step's rounding can tip, and sampled with
a seed where the rows score alike — and the drafts were really there. Each test loads
both engines afresh: the slots' prefixes of earlier tests would change which rows a step
computes.
(Sequences decoded together are not compared with sequences decoded alone: with f16 KV a
near tie can break differently beside other traffic, drafts or not — docs/engine.md.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from b3os_infer.config import EngineConfig, LlamacppModel
from b3os_infer.core import ChatRequest, Message, Sampling, TextPart
from b3os_infer.engine.base import GenerationDone, GenerationRequest, TokenEvent
from b3os_infer.engine.llamacpp import LlamaCppEngine
from b3os_infer.node.chat_model import ChatModel
from support.engines import loaded_gguf

PARAGRAPH = ("The lighthouse keeper climbs one hundred and twelve steps every evening, "
             "trims the wick, polishes the lens, and writes the wind's direction in a "
             "ledger that nobody has read since the harbour closed.")
CODE = "\n".join(f"def area_{i}(width, height):\n    return width * height * {i}\n"
                 for i in range(1, 7))
COPYING = (f"Repeat this text exactly, twice:\n\n{PARAGRAPH}",
           f"Copy this Python code exactly:\n\n{CODE}",
           f"Write this sentence three times: {PARAGRAPH[:90]}")


def load(speculative: bool, flash_attention: str = "auto") -> Iterator[ChatModel]:
    chat = loaded_gguf(LlamacppModel(), EngineConfig(parallel=4, kv_memory_mib=1024,
                                                   speculative=speculative,
                                                   flash_attention=flash_attention),
                       b"test-secret")
    asyncio.run(chat.engine.start())
    yield chat
    asyncio.run(chat.engine.close())


@pytest.fixture
def drafting() -> Iterator[ChatModel]:
    yield from load(True)


@pytest.fixture
def plain() -> Iterator[ChatModel]:
    yield from load(False)


# with flash attention, llama.cpp computes fewer than 64 rows of a sequence one at a time,
# each as a step of one row is: a drafted row's logits are a decoded row's, bit for bit.
# Without it (the short lane's default on the CPU) a drafted step's rows past the first few
# score a little differently, as rows of several sequences do: docs/engine.md, "Numerics"
@pytest.fixture
def drafting_flash() -> Iterator[ChatModel]:
    yield from load(True, "on")


@pytest.fixture
def plain_flash() -> Iterator[ChatModel]:
    yield from load(False, "on")


def test_the_short_lane_these_replies_take_has_no_flash_attention_by_default(plain):
    assert isinstance(plain.engine, LlamaCppEngine)
    short = plain.engine.lanes[0]
    assert short.window <= 8192 and not short.flash_attention


def request(model: ChatModel, text: str, sampling: Sampling,
            top_logprobs: int | None = None) -> GenerationRequest:
    chat = ChatRequest(model="m", messages=[Message("user", [TextPart(text)])])
    return GenerationRequest(model.prompt(chat).tokens, max_tokens=160, sampling=sampling,
                             top_logprobs=top_logprobs)


@dataclass(frozen=True)
class Reply:
    done: GenerationDone
    tokens: tuple[TokenEvent, ...]

    @property
    def text(self) -> str:
        return "".join(event.text for event in self.tokens)


async def reply(model: ChatModel, generation: GenerationRequest) -> Reply:
    tokens: list[TokenEvent] = []
    done = None
    async for event in model.engine.generate(generation):
        if isinstance(event, TokenEvent):
            tokens.append(event)
        elif isinstance(event, GenerationDone):
            done = event
    assert done is not None
    return Reply(done, tuple(tokens))


def replies(model: ChatModel, sampling: Sampling, *, together: bool,
            top_logprobs: int | None = None) -> list[Reply]:
    async def run() -> list[Reply]:
        generations = [request(model, text, sampling, top_logprobs) for text in COPYING]
        if together:
            return list(await asyncio.gather(*(reply(model, g) for g in generations)))
        return [await reply(model, g) for g in generations]
    return asyncio.run(run())


# A drafted step's rows score up to about 0.9 logits away from the same tokens decoded one
# at a time, how far depending on the CPU (docs/engine.md, "Numerics"): where the model
# prefers its best token by a nat or more, the greedy choice is the same either way
NEAR_TIE = 1.0


def first_difference(ours: Reply, theirs: Reply) -> int | None:
    pairs = zip(ours.tokens, theirs.tokens, strict=False)
    split = next((i for i, (a, b) in enumerate(pairs) if a.token != b.token), None)
    if split is None and len(ours.tokens) != len(theirs.tokens):
        return min(len(ours.tokens), len(theirs.tokens))
    return split


def test_greedy_replies_with_drafts_are_those_without_them_up_to_a_near_tie(drafting, plain):
    greedy = Sampling(temperature=0)
    expected = replies(plain, greedy, together=False, top_logprobs=2)
    got = replies(drafting, greedy, together=False, top_logprobs=2)
    assert all(theirs.done.drafted_tokens == 0 for theirs in expected)
    for ours, theirs in zip(got, expected, strict=True):
        split = first_difference(ours, theirs)
        if split is None:
            assert ours.text == theirs.text
            assert ours.done.generated_tokens == theirs.done.generated_tokens
            continue
        # token for token the same up to `split`; there the drafted reply took the token
        # the undrafted one ranked second, and the undrafted one's two best were near tied
        assert split < min(len(ours.tokens), len(theirs.tokens)), "one reply stopped early"
        (best, best_logprob), (second, second_logprob) = theirs.tokens[split].top[:2]
        assert ours.tokens[split].token == second, (split, ours.text, theirs.text)
        assert best_logprob - second_logprob < NEAR_TIE, (split, best_logprob, second_logprob)
    # the copies were drafted, and drafts were accepted (77 of 158 when measured)
    drafted = sum(ours.done.drafted_tokens for ours in got)
    accepted = sum(ours.done.accepted_tokens for ours in got)
    assert 0 < accepted <= drafted


def test_with_flash_attention_a_seeded_sampled_reply_draws_the_same_tokens_with_drafts(
        drafting_flash, plain_flash):
    # every token taken was sampled at its own row by the request's sampler, one draw per
    # token as without drafts: where the rows score alike, the same seed gives the same reply
    sampled = Sampling(temperature=0.8, top_p=0.95, seed=1234)
    expected = replies(plain_flash, sampled, together=False)
    got = replies(drafting_flash, sampled, together=False)
    assert [ours.text for ours in got] == [theirs.text for theirs in expected]
    assert sum(ours.done.accepted_tokens for ours in got) > 0
