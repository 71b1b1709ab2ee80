"""The reply parser, fed whole and in every chunk size: the joined events must agree."""

from __future__ import annotations

import json
from typing import Any

import pytest

from b3os_infer.core import (
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from b3os_infer.errors import MalformedToolCall
from b3os_infer.node.reply import ReplyParser


def run(text: str, size: int, **options):
    parser = ReplyParser(sign=lambda t: f"sig:{t}", **options)
    events = []
    for start in range(0, len(text), size):
        events += parser.feed(text[start:start + size])
    events += parser.finish()
    return events, parser


def summary(events):
    """Joined channels: what a client folds the stream into."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, TextDelta):
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + event.text)
            else:
                out.append(("text", event.text))
        elif isinstance(event, ThinkingDelta):
            if out and out[-1][0] == "thinking":
                out[-1] = ("thinking", out[-1][1] + event.text)
            else:
                out.append(("thinking", event.text))
        elif isinstance(event, ThinkingEnd):
            out.append(("signature", event.signature))
        elif isinstance(event, ToolCallStart):
            out.append(("call", event.name, ""))
        elif isinstance(event, ToolCallDelta):
            kind, name, args = out[-1]
            out[-1] = (kind, name, args + event.partial_json)
        elif isinstance(event, ToolCallEnd):
            kind, name, args = out[-1]
            assert json.loads(args) == event.input
            out[-1] = (kind, name, event.input)
    return out


REPLY = ("Let me think.\nIt is sunny.\n</think>\n\nI will check."
         '\n<tool_call>\n{"name": "get_weather", '
         '"arguments": {"city": "Paris {x}", "n": [1, {"a": "}"}]}}'
         '\n</tool_call>\n<tool_call>\n{"name": "noop", "arguments": {}}\n</tool_call>')
EXPECTED = [("thinking", "Let me think.\nIt is sunny."),
            ("signature", "sig:Let me think.\nIt is sunny."),
            ("text", "I will check."),
            ("call", "get_weather", {"city": "Paris {x}", "n": [1, {"a": "}"}]}),
            ("call", "noop", {})]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13, 1000])
def test_whole_and_chunked_agree(size):
    events, parser = run(REPLY, size, thinking=True, tools=True)
    assert summary(events) == EXPECTED
    assert parser.calls == 2


def test_text_only_keeps_whitespace_and_tags_when_tools_are_off():
    text = "Use <tool_call> tags.\n"
    events, _ = run(text, 3, thinking=False, tools=False)
    assert summary(events) == [("text", text)]


def test_unclosed_thinking_is_closed_with_a_signature():
    events, _ = run("still thinking", 4, thinking=True, tools=False)
    assert summary(events) == [("thinking", "still thinking"), ("signature", "sig:still thinking")]


def test_model_that_opens_its_own_think_tag():
    events, _ = run("<think>\nhm\n</think>\nHi", 2, thinking=True, tools=False)
    assert summary(events) == [("thinking", "hm"), ("signature", "sig:hm"), ("text", "Hi")]


def test_omitted_thinking_still_signs_the_hidden_text():
    events, _ = run("secret\n</think>\nanswer", 3, thinking=True, tools=False,
                    show_thinking=False)
    assert summary(events) == [("signature", "sig:secret"), ("text", "answer")]


def test_a_tag_prefix_that_is_not_a_tag_is_released():
    events, _ = run("a <tool_cal b", 1, thinking=False, tools=True)
    assert summary(events) == [("text", "a <tool_cal b")]


@pytest.mark.parametrize("size", [1, 5, 200])
def test_a_call_cut_off_before_its_name_leaves_no_markup_in_the_text(size):
    reply = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"'
    events, parser = run(reply, size, thinking=False, tools=True)
    assert [item[0] for item in summary(events)] == ["call"]
    assert parser.calls == 1
    events, _ = run('Hello <tool_call>\n{"na', size, thinking=False, tools=True)
    assert summary(events) == [("text", "Hello")]


# calls as small models write them without the tag (Qwen2.5-Coder 0.5B, measured: a fenced
# block at temperature 0, the bare object at temperature 1)
READ = frozenset({"Read"})
FENCED = '```json\n{"name": "Read", "arguments": {"file_path": "notes.txt"}}\n```'
BARE = '{"name": "Read", "arguments": {"file_path": "notes.txt"}}'
CALLED = [("call", "Read", {"file_path": "notes.txt"})]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
@pytest.mark.parametrize("reply", [FENCED, BARE, "\n  " + BARE + "\n", "```\n" + BARE + "```",
                                   BARE.replace("arguments", "parameters")])
def test_a_bare_or_fenced_call_to_a_declared_tool_is_a_call_whole_and_chunked(reply, size):
    events, parser = run(reply, size, thinking=False, tools=True, tool_names=READ)
    assert summary(events) == CALLED and parser.calls == 1


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_fenced_call_after_the_reasoning_is_a_call(size):
    events, _ = run("The file holds it.\n</think>\n\n" + FENCED, size, thinking=True,
                    tools=True, tool_names=READ)
    assert summary(events)[-1:] == CALLED


@pytest.mark.parametrize("size", [1, 5, 1000])
@pytest.mark.parametrize("reply", [
    '{"name": "Write", "arguments": {"file_path": "a"}}',   # no such tool declared
    '{"answer": 42}',                                       # JSON that is no call
    "```python\nprint(1)\n```",                             # a fenced block of code
    "Here is the call: " + BARE,                            # a call not at the start
    "`Read` is the tool",
])
def test_json_or_fences_that_are_no_call_to_a_declared_tool_stay_text(reply, size):
    events, parser = run(reply, size, thinking=False, tools=True, tool_names=READ)
    assert summary(events) == [("text", reply)] and parser.calls == 0


# Qwen2.5-Coder 1.5B under Claude Code's prompt (measured, docs/agents.md): some invented
# text, then the call on a line of its own, in doubled braces (Read) or as inline code (Write)
DOUBLED = '{{"name": "Read", "arguments": {"file_path": "notes.txt"}}}'
PREAMBLE = "<system-reminder>\n\n*Read*\n\n`notes.txt` contains the password.\n</system-reminder>"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
@pytest.mark.parametrize("call", [BARE, FENCED, DOUBLED, "  " + DOUBLED + "\n",
                                  "`" + BARE + "`"])
def test_a_call_on_a_line_of_its_own_after_text_is_a_call_and_the_text_stays(call, size):
    events, parser = run(PREAMBLE + "\n\n" + call, size, thinking=False, tools=True,
                         tool_names=READ)
    assert summary(events) == [("text", PREAMBLE)] + CALLED and parser.calls == 1


@pytest.mark.parametrize("size", [1, 3, 1000])
@pytest.mark.parametrize("reply", [DOUBLED, "```json\n" + DOUBLED + "\n```", "`" + BARE + "`"])
def test_a_doubled_brace_or_inline_code_call_at_the_start_is_a_call(reply, size):
    events, parser = run(reply, size, thinking=False, tools=True, tool_names=READ)
    assert summary(events) == CALLED and parser.calls == 1


@pytest.mark.parametrize("size", [1, 2, 1000])
def test_calls_on_consecutive_lines_are_each_a_call(size):
    second = BARE.replace("notes.txt", "todo.txt")
    events, parser = run("Reading both.\n" + BARE + "\n" + second, size, thinking=False,
                         tools=True, tool_names=READ)
    assert summary(events) == [("text", "Reading both."), *CALLED,
                               ("call", "Read", {"file_path": "todo.txt"})]
    assert parser.calls == 2


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
@pytest.mark.parametrize("reply", [
    "Lines:\n{\"answer\": 42}\n{not json}\n```python\nprint(1)\n```\n`Read` it\n\n",
    "A set:\n{{1, 2}}\nand {\n",
    "Say\n" + BARE.replace("Read", "Write"),       # no such tool declared
    "Ends with a brace\n{",
    "Inline:\n`{\"a\": 1}` and `Read`\n`",
])
def test_lines_that_open_no_call_to_a_declared_tool_stay_text_exactly(reply, size):
    events, parser = run(reply, size, thinking=False, tools=True, tool_names=READ)
    assert summary(events) == [("text", reply)] and parser.calls == 0


def test_without_tool_names_a_bare_call_is_text():
    events, _ = run(BARE, 3, thinking=False, tools=True)
    assert summary(events) == [("text", BARE)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_reply_the_model_may_open_reasoning_in_is_text_when_it_answers_straight_away(size):
    events, _ = run("Hello there.", size, thinking=False, may_think=True, tools=False)
    assert summary(events) == [("text", "Hello there.")]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_reply_the_model_may_open_reasoning_in_reasons_when_it_starts_with_think(size):
    events, _ = run("<think>\nIt greets me.\n</think>\n\nHello.", size, thinking=False,
                    may_think=True, tools=False)
    assert summary(events) == [("thinking", "It greets me."),
                               ("signature", "sig:It greets me."), ("text", "Hello.")]


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_reply_the_model_may_open_reasoning_in_can_call_a_tool_straight_away(size):
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    events, parser = run(text, size, thinking=False, may_think=True, tools=True,
                         tool_names=frozenset({"get_weather"}))
    assert summary(events) == [("call", "get_weather", {"city": "Paris"})]
    assert parser.calls == 1


def test_a_reply_that_is_only_the_start_of_think_is_text():
    events, _ = run("<thi", 1, thinking=False, may_think=True, tools=False)
    assert summary(events) == [("text", "<thi")]


# a reply the token limit cut inside a call's arguments, tagged and bare
CUT_TAGGED = 'I will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
CUT_BARE = '{"name": "Read", "arguments": {"file_path": "no'


def opened(events):
    """``summary``, an open call's fragments without the whitespace a small chunk may
    leave before them (the header matches before the space after its colon arrives)."""
    return [item[:2] + (item[2].lstrip(),) if item[0] == "call" and isinstance(item[2], str)
            else item for item in summary(events)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_call_the_reply_ends_inside_keeps_its_fragments_but_gets_no_end_and_no_count(size):
    events, parser = run(CUT_TAGGED, size, thinking=False, tools=True)
    assert opened(events) == [("text", "I will check."),
                               ("call", "get_weather", '{"city": "Pa')]
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert parser.calls == 0


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_a_bare_call_the_reply_ends_inside_is_not_a_call_with_empty_input(size):
    events, parser = run(CUT_BARE, size, thinking=False, tools=True, tool_names=READ)
    assert opened(events) == [("call", "Read", '{"file_path": "no')]
    assert ToolCallEnd({}) not in events and parser.calls == 0


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_cut_call_after_a_whole_one_leaves_only_the_whole_one_counted(size):
    whole = '<tool_call>\n{"name": "noop", "arguments": {}}\n</tool_call>\n'
    events, parser = run(whole + CUT_TAGGED.split("\n", 1)[1], size, thinking=False,
                         tools=True)
    assert opened(events) == [("call", "noop", {}), ("call", "get_weather", '{"city": "Pa')]
    assert [e for e in events if isinstance(e, ToolCallEnd)] == [ToolCallEnd({})]
    assert parser.calls == 1


@pytest.mark.parametrize("size", [1, 3, 1000])
@pytest.mark.parametrize("arguments, says", [
    ('{"city": Paris}', "not valid JSON"),
    ('{"city": "Paris",}', "not valid JSON"),
    ('[1, 2]', "not an object"),
])
def test_whole_arguments_that_are_no_json_object_raise_malformed_tool_call_naming_the_tool(
        arguments, says, size):
    reply = f'<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call>'
    with pytest.raises(MalformedToolCall, match=f"'get_weather' whose arguments .*{says}"
                       ) as raised:
        run(reply, size, thinking=False, tools=True)
    assert raised.value.status == 500 and raised.value.code == "malformed_tool_call"
    assert raised.value.detail.strip() == arguments    # logged, not sent
