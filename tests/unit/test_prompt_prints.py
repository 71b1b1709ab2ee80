"""Prompt prints: why a prompt did not reuse an earlier reply's cached prefix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from b3os_infer.core import ChatRequest, Message, TextPart, Thinking, Tool
from b3os_infer.node.prompt_prints import PromptPrints, prompt_print

TOOL = Tool(name="Read", description="Read a file", input_schema={"type": "object"})
FIRST = ChatRequest(model="m", system="Be brief.", tools=[TOOL],
                    messages=[Message("user", [TextPart("hi")])])
NEXT = replace(FIRST, messages=[*FIRST.messages, Message("assistant", [TextPart("hello")]),
                                Message("user", [TextPart("more")])])


@pytest.fixture
def prints() -> PromptPrints:
    store = PromptPrints()
    store.remember("msg_1", prompt_print(FIRST, 500))
    return store


def diagnose(prints: PromptPrints, request: ChatRequest, cached: int):
    return prints.diagnose("msg_1", request, prompt_print(request, 600), cached)


def test_a_conversation_that_appends_and_was_served_from_the_cache_has_no_miss(prints):
    assert diagnose(prints, NEXT, cached=480) is None


@pytest.mark.parametrize(("changed", "reason"), [
    (replace(NEXT, model="other"), "model_changed"),
    (replace(NEXT, system="Be long."), "system_changed"),
    (replace(NEXT, tools=[]), "tools_changed"),
    (replace(NEXT, messages=[Message("user", [TextPart("HI")]), *NEXT.messages[1:]]),
     "messages_changed"),
])
def test_the_first_part_that_changed_is_the_reason_with_the_tokens_missed(prints, changed,
                                                                          reason):
    miss = diagnose(prints, changed, cached=20)
    assert (miss.reason, miss.missed_tokens) == (reason, 480)


def test_a_model_change_is_reported_before_a_system_change(prints):
    assert diagnose(prints, replace(NEXT, model="other", system="x"), 0).reason == \
        "model_changed"


def test_an_unknown_reply_id_is_not_found(prints):
    assert prints.diagnose("msg_2", NEXT, prompt_print(NEXT, 600), 0).reason == \
        "previous_not_found"


def test_a_matching_prompt_the_cache_did_not_serve_is_unavailable_not_a_change(prints):
    assert diagnose(prints, NEXT, cached=0).reason == "unavailable"
    # within 64 tokens of the earlier prompt still counts as served
    assert diagnose(prints, NEXT, cached=436) is None


def test_a_change_of_thinking_is_unavailable(prints):
    thinking = replace(NEXT, thinking=Thinking(budget_tokens=1024))
    assert diagnose(prints, thinking, cached=480).reason == "unavailable"


def test_only_the_last_prints_are_kept():
    store = PromptPrints(capacity=2)
    for name in ("a", "b", "c"):
        store.remember(name, prompt_print(FIRST, 10))
    assert store.diagnose("a", NEXT, prompt_print(NEXT, 20), 10).reason == \
        "previous_not_found"
    assert store.diagnose("c", NEXT, prompt_print(NEXT, 20), 10) is None
