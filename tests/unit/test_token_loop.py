"""The node's one token loop (node/decoding.py): usage travels on the stream as
``Counted`` events, chat and raw text stop the same way, and the generation service
hands the routes streams without them."""

from __future__ import annotations

import pytest

from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.core import (
    ChatRequest,
    Counted,
    Finished,
    Message,
    Started,
    TextDelta,
    TextPart,
    TextRequest,
    Usage,
)
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.generation.pipeline import _tallied, _Tally
from b3os_infer.node.choices import total_usage
from b3os_infer.node.completion import stream_text

pytestmark = pytest.mark.anyio

WORDS = Reply(" ".join(["word"] * 40), repeat=True)


async def _model(context_window: int = 8192):
    engine = ScriptedEngine(Script(replies=(WORDS,), context_window=context_window))
    await engine.start()
    return scripted_model(ModelBasics(id="m"), engine, b"secret")


def _chat(max_tokens: int | None) -> ChatRequest:
    return ChatRequest(model="m", messages=[Message("user", [TextPart("hi")])],
                       max_tokens=max_tokens)


async def _events(stream):
    return [event async for event in stream]


async def test_each_counted_token_is_followed_by_the_usage_so_far_and_the_last_is_the_final():
    events = await _events((await _model()).stream(_chat(12)))
    counts = [e.usage.output_tokens for e in events if isinstance(e, Counted)]
    assert counts == list(range(1, 13))
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.usage.output_tokens == 12
    assert isinstance(events[0], Started) and events[0].usage.output_tokens == 0


async def test_chat_and_raw_text_both_stop_with_window_where_the_window_cut_them():
    model = await _model(context_window=64)
    chat = await _events(model.stream(_chat(None)))
    prompt = model.engine.tokenize("hi " * 20, add_special=False)
    text = await _events(stream_text(model, TextRequest(model="m", prompt=prompt,
                                                        max_tokens=None)))
    # a 64-token window: each may write 32 (half of it), and each prompt leaves less room
    assert model.card.max_output_tokens == 32
    assert 64 - len(prompt) < 32 and 64 - len(model.prompt(_chat(None)).tokens) < 32
    assert [chat[-1].stop_reason, text[-1].stop_reason] == ["window", "window"]


async def test_the_service_keeps_counted_off_the_stream_and_tallies_the_usage_so_far():
    tally = _Tally([Usage()], total_usage)
    stream = _tallied(0, (await _model()).stream(_chat(12)), tally)
    seen = []
    async for event in stream:
        seen.append(event)
        if sum(isinstance(e, TextDelta) for e in seen) == 5:
            break
    await stream.aclose()
    assert not any(isinstance(e, Counted) for e in seen)
    assert tally.so_far().output_tokens == 5   # what a reply cut here is settled with
