"""The scripted engine on its own: scripts from files, reply choice, tokens, budgets."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from b3os_infer.compose import load_model
from b3os_infer.config import load_config
from b3os_infer.engine.base import (
    Admitted,
    GenerationDone,
    GenerationRequest,
    ReasoningBudget,
    TokenEvent,
)
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import (
    Reply,
    Script,
    ScriptError,
    When,
    load_script,
    script_from_dict,
    split_tokens,
)
from b3os_infer.errors import InternalError


def run(engine: ScriptedEngine, prompt: str, **options: object) -> list[Any]:
    async def go() -> list[Any]:
        await engine.start()
        request = GenerationRequest(prompt=engine.tokenize(prompt), max_tokens=100)
        request = GenerationRequest(**{**request.__dict__, **options})
        return [event async for event in engine.generate(request)]

    return asyncio.run(go())


def text_of(events: list[object]) -> str:
    return "".join(e.text for e in events if isinstance(e, TokenEvent))


def test_text_is_cut_into_word_tokens_with_their_leading_spaces():
    assert split_tokens("Hello big\n world") == ["Hello", " big", "\n world"]


def test_a_config_with_a_scripted_model_serves_its_script_relative_to_the_config(tmp_path):
    (tmp_path / "replies.toml").write_text('[[replies]]\ntext = "Hi there"\ncached_tokens = 3\n')
    (tmp_path / "b3os.toml").write_text('[model]\nid = "fake"\nengine = "scripted"\n'
                                        'script = "replies.toml"\n')
    config = load_config(tmp_path / "b3os.toml")
    model = load_model(config.model, config.engine, b"secret")
    events = run(model.engine, "<|im_start|>user\nhello<|im_end|>\n")
    assert model.card.id == "fake" and text_of(events) == "Hi there"
    assert events[0] == Admitted(prompt_tokens=len("user\nhello\n") + 2, cached_tokens=3)
    assert events[-1] == GenerationDone("eog", 13, 3, 2)


def test_replies_go_in_order_and_a_condition_picks_its_reply_by_the_last_user_turn(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [
        {"text": "weather", "when": {"last_user_contains": "rain"}, "repeat": True},
        {"text": "first"}, {"text": "second"}]}))
    engine = ScriptedEngine(load_script(path))
    turn = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
    answers = [text_of(run(engine, turn.format(q))) for q in ("hi", "rain?", "yo", "rain!")]
    assert answers == ["first", "weather", "second", "weather"]
    assert engine.received[1].last_user == "rain?"
    with pytest.raises(InternalError, match="no reply left"):
        run(engine, turn.format("hi"))


def test_max_tokens_cuts_the_reply_and_a_failure_comes_after_its_tokens():
    engine = ScriptedEngine(Script((Reply("a b c d"), Reply("x y z", fail_at=2))))
    cut = run(engine, "q", max_tokens=2)
    assert text_of(cut) == "a b" and cut[-1].reason == "length"
    seen: list[object] = []

    async def failing() -> None:
        request = GenerationRequest(prompt=engine.tokenize("q"), max_tokens=10)
        async for event in engine.generate(request):
            seen.append(event)

    with pytest.raises(InternalError, match="scripted engine failed"):
        asyncio.run(failing())
    assert text_of(seen) == "x y"


def test_a_spent_reasoning_budget_feeds_the_close_tokens_and_goes_on():
    engine = ScriptedEngine(Script((Reply(tokens=("one", " two", " three", "Answer")),)))
    close = engine.tokenize("</think>")
    budget = ReasoningBudget(budget=2, end_marker="</think>", close_tokens=close)
    events = run(engine, "q", reasoning=budget)
    assert text_of(events) == "one two</think> threeAnswer"
    assert events[-1].generated_tokens == 4 + len(close)


def test_a_script_with_an_unknown_key_says_where():
    with pytest.raises(ScriptError, match=r"replies\[0\]: unknown key\(s\) txt"):
        script_from_dict({"replies": [{"txt": "x"}]})


def test_special_tokens_render_as_nothing_and_the_detokenized_prompt_keeps_them():
    engine = ScriptedEngine(Script((Reply("x"),)))
    tokens = engine.tokenize("<|im_start|>hé<|im_end|>")
    assert len(tokens) == 5 and engine.token_bytes(tokens[0]) == b""
    assert engine.detokenize(tokens) == "<|im_start|>hé<|im_end|>"
    assert When(prompt_contains="hé").matches(engine.detokenize(tokens), "")
