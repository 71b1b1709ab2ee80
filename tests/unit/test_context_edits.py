"""Context edits as decoded (the real API's defaults) and the turns clear_thinking counts."""

from __future__ import annotations

from b3os_infer.anthropic.decode import decode_count_tokens_request, decode_messages_request
from b3os_infer.core import ClearThinking, ClearToolUses, Message, TextPart, ToolResultPart
from b3os_infer.node.context_edits import assistant_turns

BASE = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}]}


def _edits(*edits):
    request, _ = decode_messages_request({**BASE, "context_management": {"edits": list(edits)}})
    return request.context_edits


def test_bare_edits_take_the_real_apis_defaults():
    assert _edits({"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015"}) \
        == (ClearToolUses(trigger_tokens=100_000, trigger_tool_uses=None, keep=3,
                          clear_at_least=0, exclude=frozenset(), clear_inputs=False),
            ClearThinking(keep_turns=1))


def test_every_option_is_read():
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 7},
            "keep": {"type": "tool_uses", "value": 1},
            "clear_at_least": {"type": "input_tokens", "value": 500},
            "exclude_tools": ["Grep"], "clear_tool_inputs": ["Read"]}
    thinking = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns",
                                                            "value": 2}}
    assert _edits(edit, thinking, {"type": "clear_thinking_20251015", "keep": "all"}) == (
        ClearToolUses(trigger_tokens=None, trigger_tool_uses=7, keep=1, clear_at_least=500,
                      exclude=frozenset({"Grep"}), clear_inputs=frozenset({"Read"})),
        ClearThinking(keep_turns=2), ClearThinking(keep_turns=None))


def test_no_context_management_is_none_and_empty_edits_are_an_empty_tuple():
    assert decode_messages_request(BASE)[0].context_edits is None
    assert _edits() == ()
    counted = decode_count_tokens_request({**BASE, "context_management": {}})
    assert counted.context_edits == ()


def test_a_turn_runs_through_its_tool_loop_until_the_user_says_more():
    user, tool = Message("user", [TextPart("go")]), Message("user", [ToolResultPart("1", "r")])
    said = Message("assistant", [TextPart("ok")])
    messages = [user, said, tool, said, tool, said, user, said, user]
    assert assistant_turns(messages) == [-1, 0, -1, 0, -1, 0, -1, 1, -1]


def test_the_prompt_counter_renders_the_request_it_counted_last_only_once():
    from b3os_infer.core import ChatRequest
    from b3os_infer.node.chat_model import Prompt
    from b3os_infer.node.context_edits import PromptCounter

    rendered: list[ChatRequest] = []

    def render(request: ChatRequest) -> Prompt:
        rendered.append(request)
        return Prompt("text", [1, 2, 3], False)

    counter = PromptCounter(render)
    first, second = ChatRequest(model="a", messages=[]), ChatRequest(model="b", messages=[])
    assert counter.count(first) == 3 and counter.count(second) == 3
    assert counter.prompt(second).tokens == [1, 2, 3]
    assert [r.model for r in rendered] == ["a", "b"]        # the last counted: not again
    counter.prompt(first)
    assert [r.model for r in rendered] == ["a", "b", "a"]   # an earlier one: again
