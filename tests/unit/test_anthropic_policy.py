"""The Anthropic field policy: the docs match the table, and the table is what decoding does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from b3os_infer.anthropic import policy
from b3os_infer.anthropic.decode import (
    SYSTEM_ROLE_MESSAGE,
    decode_count_tokens_request,
    decode_messages_request,
)
from b3os_infer.core import ThinkingPart, ToolCallPart, ToolResultPart, ToolsChangedPart
from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.node.cards import ModelCard
from b3os_infer.node.output_cap import capped
from b3os_infer.wire_models import kind_rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "anthropic.md"
USER = {"role": "user", "content": "Hi"}
TOOL = {"name": "Read", "description": "read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def base(**changes):
    return {"model": "m", "max_tokens": 4096, "messages": [USER], **changes}


def test_docs_are_rendered_from_the_table():
    text = DOC.read_text()
    rendered = re.search(r"<!-- policy:begin -->\n(.*)<!-- policy:end -->", text, re.S)
    assert rendered, "docs/anthropic.md lost its policy markers"
    assert rendered.group(1).strip() == policy.render_markdown().strip(), \
        "run: python -m b3os_infer.anthropic.policy, and paste it between the markers"


@pytest.mark.parametrize("table", [policy.MESSAGES_FIELDS, policy.COUNT_TOKENS_FIELDS,
                                   kind_rules(policy.CONTENT_BLOCKS), policy.TOOL_FIELDS,
                                   kind_rules(policy.TOOL_TYPES)])
def test_each_name_is_in_exactly_one_list(table):
    names = [r.name for r in table]
    assert len(names) == len(set(names))
    assert all(r.status in ("supported", "ignored", "refused") for r in table)


def test_what_claude_code_sends_is_accepted():
    body = base(
        max_tokens=8000, stream=True,
        system=[{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1; cch=abc;"},
                {"type": "text", "text": "You are Claude Code.",
                 "cache_control": {"type": "ephemeral"}}],
        tools=[{**TOOL, "eager_input_streaming": True, "strict": True,
                "cache_control": {"type": "ephemeral"}},
               {**TOOL, "name": "CronList", "defer_loading": True}],
        thinking={"type": "adaptive", "display": "omitted"},
        output_config={"effort": "high"},
        context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        metadata={"user_id": '{"device_id": "d"}'},
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>r</system-reminder>"},
            {"type": "text", "text": "Name one river.", "cache_control": {"type": "ephemeral"}}]}])
    request, stream = decode_messages_request(body)
    assert stream and request.system == "You are Claude Code."
    assert request.thinking is not None and request.thinking.display == "omitted"
    assert request.thinking.budget_tokens == 2048
    assert [t.name for t in request.tools] == ["Read"]   # CronList waits to be loaded


@pytest.mark.parametrize("field,value", [
    ("service_tier", "auto"), ("inference_geo", "us"), ("speed", "fast"),
    ("cache_control", {"type": "ephemeral"}), ("diagnostics", {"previous_message_id": "m"}),
    ("fallback_credit_token", "t")])
def test_infrastructure_fields_are_accepted_and_ignored(field, value):
    decode_messages_request(base(**{field: value}))


@pytest.mark.parametrize("field,value", [
    ("container", "c"), ("mcp_servers", [{"type": "url", "name": "x", "url": "u"}]),
    ("fallbacks", [{"model": "other"}]), ("frobnicate", 1)])
def test_refused_and_unknown_fields_name_themselves(field, value):
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request(base(**{field: value}))
    assert info.value.param == field and info.value.code == "unsupported_parameter"


@pytest.mark.parametrize("tool_type", ["code_execution_20250825", "bash_20250124",
                                       "tool_search_tool_regex_20251119", "nonsense"])
def test_server_and_anthropic_defined_tools_are_refused_by_path(tool_type):
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request(base(tools=[TOOL, {"type": tool_type, "name": "x"}]))
    assert info.value.param == "tools[1]"


@pytest.mark.parametrize("block", [
    {"type": "image", "source": {"type": "url", "url": "u"}},
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}},
    {"type": "search_result", "source": "s", "title": "t", "content": []},
    {"type": "text", "text": "cited", "citations": [{"type": "char_location"}]}])
def test_input_kinds_the_model_cannot_use_are_refused_by_path(block):
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request(base(messages=[{"role": "user", "content": [
            {"type": "text", "text": "look"}, block]}]))
    assert info.value.param.startswith("messages[0].content[1]")


def conversation(result_first=True, result_id="toolu_1"):
    result = {"type": "tool_result", "tool_use_id": result_id,
              "content": [{"type": "text", "text": "42"}], "is_error": False}
    text = {"type": "text", "text": "thanks"}
    return [USER,
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}}]},
            {"role": "user", "content": [result, text] if result_first else [text, result]}]


def test_a_tool_round_trip_decodes():
    request, _ = decode_messages_request(base(tools=[TOOL], messages=conversation()))
    assistant, answer = request.messages[1], request.messages[2]
    assert isinstance(assistant.parts[0], ThinkingPart)
    assert isinstance(assistant.parts[1], ToolCallPart)
    assert assistant.parts[1].input == {"path": "a"}
    assert answer.parts[0] == ToolResultPart("toolu_1", "42", False)


@pytest.mark.parametrize("messages,param", [
    (conversation(result_id="toolu_9"), "messages[2].content[0]"),
    (conversation(result_first=False), "messages[2].content[1]"),
    (conversation()[:2] + [USER], "messages[1]")])
def test_tool_use_and_tool_result_must_pair(messages, param):
    with pytest.raises(InvalidRequest) as info:
        decode_messages_request(base(tools=[TOOL], messages=messages))
    assert info.value.param == param


@pytest.mark.parametrize("changes,param", [
    ({"thinking": {"type": "enabled", "budget_tokens": 512}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": 5000}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": [TOOL],
      "tool_choice": {"type": "any"}}, "thinking"),
    ({"thinking": {"type": "adaptive"}, "temperature": 0.5}, "temperature"),
    ({"tool_choice": {"type": "tool", "name": "Nope"}, "tools": [TOOL]}, "tool_choice.name"),
    ({"tool_choice": {"type": "any"}}, "tool_choice"),
    ({"tools": [TOOL, TOOL]}, "tools[1].name"),
    ({"tools": [{**TOOL, "name": "bad name"}]}, "tools[0].name"),
    ({"output_config": {"effort": "extreme"}}, "output_config.effort")])
def test_validation_like_the_real_api(changes, param):
    with pytest.raises(InvalidRequest) as info:
        decode_messages_request(base(**changes))
    assert info.value.param == param


def test_count_tokens_reads_the_prompt_fields_and_refuses_what_create_refuses():
    request = decode_count_tokens_request({"model": "m", "messages": [USER], "tools": [TOOL],
                                           "thinking": {"type": "enabled",
                                                        "budget_tokens": 2000}})
    assert request.tools and request.thinking is not None
    with pytest.raises(UnsupportedParameter):
        decode_count_tokens_request({"model": "m", "messages": [USER], "container": "c"})


LAZY = {**TOOL, "name": "CronList", "defer_loading": True}
ADD_LAZY = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "CronList"}}


def test_a_deferred_tool_is_listed_inline_once_loaded_and_a_removed_one_is_withdrawn():
    removal = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Read"}}
    request, _ = decode_messages_request(base(tools=[TOOL, LAZY], messages=[
        {"role": "user", "content": [{"type": "text", "text": "go"}, ADD_LAZY, removal]}]))
    assert [(t.name, t.inline, t.withdrawn) for t in request.tools] == [
        ("Read", False, True), ("CronList", True, False)]
    added, removed = request.messages[0].parts[1:]
    assert isinstance(added, ToolsChangedPart) and [t.name for t in added.added] == ["CronList"]
    assert removed == ToolsChangedPart(removed=("Read",))


def test_a_tool_loaded_twice_is_announced_once():
    request, _ = decode_messages_request(base(tools=[TOOL, LAZY], messages=[
        {"role": "user", "content": [{"type": "text", "text": "go"}, ADD_LAZY, ADD_LAZY]}]))
    assert len(request.messages[0].parts) == 2


@pytest.mark.parametrize("messages,param", [
    ([{"role": "assistant", "content": [ADD_LAZY]}], "messages[0].content[0]"),
    ([{"role": "user", "content": [{"type": "tool_reference", "tool_name": "CronList"}]}],
     "messages[0].content[0].type"),
    ([{"role": "user", "content": [{"type": "tool_removal", "tool": {
        "type": "tool_reference", "name": "CronList"}}]}], "messages[0].content[0].tool.name"),
    ([{"role": "user", "content": [{"type": "tool_addition", "tool": {
        "type": "tool_definition", "definition": TOOL}}]}],
     "messages[0].content[0].tool.definition.name")])
def test_tool_changes_in_the_wrong_place_or_naming_nothing_name_the_block(messages, param):
    with pytest.raises(InvalidRequest) as info:
        decode_messages_request(base(tools=[TOOL, LAZY], messages=messages))
    assert info.value.param == param


def test_a_system_message_with_tool_changes_is_refused_with_the_wording_clients_retry_on():
    system = {"role": "system", "clear_at": "next_user_message",
              "content": [{"type": "text", "text": "s"}, ADD_LAZY]}
    with pytest.raises(InvalidRequest) as info:
        decode_messages_request(base(tools=[TOOL, LAZY], messages=[USER, system]))
    assert info.value.message == SYSTEM_ROLE_MESSAGE and info.value.param == "messages[1].role"


def _card(limit: int) -> ModelCard:
    return ModelCard(id="m", display_name="m", kind="chat", context_window=32768,
                     max_output_tokens=limit)


@pytest.mark.parametrize("thinking,limit,budget", [
    ({"type": "adaptive", "display": "updates"}, 2000, 1000),   # 2048 (high) > half
    ({"type": "adaptive"}, 8192, 2048),
    ({"type": "enabled", "budget_tokens": 3000}, 8192, 3000),
    ({"type": "enabled", "budget_tokens": 9000}, 8192, 4096)])
def test_lowering_max_tokens_lowers_a_thinking_budget_that_no_longer_fits(thinking, limit,
                                                                          budget):
    request, _ = decode_messages_request(base(max_tokens=32000, thinking=thinking))
    request = capped(request, _card(limit))
    assert request.max_tokens == limit
    assert request.thinking is not None and request.thinking.budget_tokens == budget


def test_a_max_tokens_within_the_limit_is_left_alone():
    request, _ = decode_messages_request(base(max_tokens=100, thinking={"type": "adaptive"}))
    request = capped(request, _card(8192))
    assert request.max_tokens == 100 and request.thinking.budget_tokens == 50
