"""Every row of the Anthropic policy tables does what its list says.

Supported fields are read (their value reaches the neutral request), ignored ones are
accepted and dropped (the neutral request is the same without them), refused fields and
kinds are refused naming their own path.
"""

from __future__ import annotations

from typing import Any

import pytest

from b3os_infer.anthropic import policy
from b3os_infer.anthropic.decode import decode_count_tokens_request, decode_messages_request
from b3os_infer.anthropic.wire.content import (
    TextBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from b3os_infer.anthropic.wire.params import (
    MessageCountTokensParams,
    MessageCreateParams,
    OutputConfigParam,
)
from b3os_infer.anthropic.wire.tools import ToolParam
from b3os_infer.core import (
    RedactedThinkingPart,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolsChangedPart,
)
from b3os_infer.errors import UnsupportedParameter
from b3os_infer.wire_models import WireModel, kind_rules, policy_rules

TOOL = {"name": "Read", "input_schema": {"type": "object"}}
SCHEMA_FORMAT = {"type": "json_schema", "schema": {"type": "object"}}
SUPPORTED = {
    "model": "other", "max_tokens": 99, "messages": [{"role": "user", "content": "Bye"}],
    "system": "Be brief.", "stream": True, "stop_sequences": ["END"], "temperature": 0.5,
    "top_p": 0.5, "top_k": 5, "tools": [TOOL], "tool_choice": {"type": "none"},
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "output_config": {"format": SCHEMA_FORMAT}, "output_format": SCHEMA_FORMAT,
    "diagnostics": {"previous_message_id": "msg_1"},
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
}
TOOL_SUPPORTED = {"name": "Write", "input_schema": {"type": "object", "required": ["a"]},
                  "description": "reads", "defer_loading": True}
# read and checked, with nothing to change here: inputs always follow the schema, and a
# custom tool is what an absent type means
NO_EFFECT = {"strict": True, "type": "custom"}
ANY_JSON = {"kind": "whatever the vendor adds", "values": [1, 2.5, None, True]}

ROUTES = [(MessageCreateParams, lambda body: decode_messages_request(body),
           {"model": "m", "max_tokens": 4096, "messages": [{"role": "user", "content": "Hi"}]}),
          (MessageCountTokensParams, lambda body: decode_count_tokens_request(body),
           {"model": "m", "messages": [{"role": "user", "content": "Hi"}]})]


def rows(model: type[WireModel], status: str) -> list[str]:
    return [r.name for r in policy_rules(model) if r.status == status]


def conversation(block_kind: str, extra: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool round trip whose block of ``block_kind`` carries ``extra``."""
    blocks = {"text": {"type": "text", "text": "Read a"},
              "tool_use": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
              "tool_result": {"type": "tool_result", "tool_use_id": "toolu_1",
                              "content": "42"}}
    blocks[block_kind] = {**blocks[block_kind], **extra}
    return [{"role": "user", "content": [blocks["text"]]},
            {"role": "assistant", "content": [blocks["tool_use"]]},
            {"role": "user", "content": [blocks["tool_result"]]}]


def test_the_field_tables_are_the_models_markers():
    assert policy.MESSAGES_FIELDS == policy_rules(MessageCreateParams)
    assert policy.COUNT_TOKENS_FIELDS == policy_rules(MessageCountTokensParams)
    assert policy.TOOL_FIELDS == policy_rules(ToolParam)
    names = {info.alias or name for name, info in MessageCreateParams.model_fields.items()}
    assert {r.name for r in policy.MESSAGES_FIELDS} == names


@pytest.mark.parametrize("name", rows(MessageCreateParams, "supported"))
def test_every_supported_messages_field_reaches_the_neutral_request(name):
    _, decode, base = ROUTES[0]
    assert decode({**base, name: SUPPORTED[name]}) != decode(base)


@pytest.mark.parametrize("name", rows(MessageCountTokensParams, "supported"))
def test_every_supported_count_tokens_field_reaches_the_neutral_request(name):
    _, decode, base = ROUTES[1]
    assert decode({**base, name: SUPPORTED[name]}) != decode(base)


@pytest.mark.parametrize("name", rows(ToolParam, "supported"))
def test_every_supported_tool_field_is_read(name):
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}],
            "tools": [TOOL]}
    changed = {**base, "tools": [{**TOOL, name: (NO_EFFECT | TOOL_SUPPORTED)[name]}]}
    request, _ = decode_messages_request(changed)
    if name in NO_EFFECT:
        assert request == decode_messages_request(base)[0]
    else:
        assert request != decode_messages_request(base)[0]


@pytest.mark.parametrize("model,decode,base", ROUTES)
def test_every_ignored_top_level_field_is_accepted_and_dropped(model, decode, base):
    for name in rows(model, "ignored"):
        assert decode({**base, name: ANY_JSON}) == decode(base), name


@pytest.mark.parametrize("model,decode,base", ROUTES)
def test_every_refused_top_level_field_is_refused_by_its_name(model, decode, base):
    for name in rows(model, "refused"):
        with pytest.raises(UnsupportedParameter) as info:
            decode({**base, name: ANY_JSON})
        assert info.value.param == name and "not supported here" in info.value.message
        assert decode({**base, name: None}) == decode(base), "null is accepted"


def test_every_ignored_tool_field_is_accepted_and_dropped():
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}],
            "tools": [TOOL]}
    for name in rows(ToolParam, "ignored"):
        changed = {**base, "tools": [{**TOOL, name: ANY_JSON}]}
        assert decode_messages_request(changed) == decode_messages_request(base), name


@pytest.mark.parametrize("model,kind", [(TextBlockParam, "text"),
                                        (ToolUseBlockParam, "tool_use"),
                                        (ToolResultBlockParam, "tool_result")])
def test_block_fields_are_ignored_or_refused_as_marked(model, kind):
    base = {"model": "m", "max_tokens": 10, "tools": [TOOL], "messages": conversation(kind, {})}
    index = {"text": 0, "tool_use": 1, "tool_result": 2}[kind]
    for name in rows(model, "ignored"):
        body = {**base, "messages": conversation(kind, {name: ANY_JSON})}
        assert decode_messages_request(body) == decode_messages_request(base), name
    for name in rows(model, "refused"):
        with pytest.raises(UnsupportedParameter) as info:
            decode_messages_request({**base, "messages": conversation(kind, {name: [{}]})})
        assert info.value.param == f"messages[{index}].content[0].{name}"


def test_output_configs_ignored_fields_are_dropped():
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}],
            "output_config": {"effort": "low"}}
    for name in rows(OutputConfigParam, "ignored"):
        body = {**base, "output_config": {"effort": "low", name: ANY_JSON}}
        assert decode_messages_request(body) == decode_messages_request(base), name


@pytest.mark.parametrize("kind", [r.name for r in kind_rules(policy.CONTENT_BLOCKS)
                                  if r.status == "refused"])
def test_every_refused_block_kind_is_refused_by_the_blocks_path(kind):
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": kind}]}]})
    assert info.value.param == "messages[0].content[1]" and repr(kind) in info.value.message


@pytest.mark.parametrize("kind", [r.name for r in kind_rules(policy.TOOL_TYPES)
                                  if r.status == "refused"])
def test_every_refused_tool_type_is_refused_by_the_tools_path(kind):
    name = kind.replace("*", "20250124")
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "Hi"}], "tools": [TOOL, {"type": name, "name": "x"}]})
    assert info.value.param == "tools[1]" and "tools of type" in info.value.message


@pytest.mark.parametrize("kind", [r.name for r in kind_rules(policy.TOOL_CHANGES)
                                  if r.status == "refused"])
def test_every_refused_tool_change_target_is_refused_by_the_blocks_tool_path(kind):
    change = {"type": "tool_addition", "tool": {"type": kind, "server_name": "s", "name": "x"}}
    with pytest.raises(UnsupportedParameter) as info:
        decode_messages_request({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, change]}]})
    assert info.value.param == "messages[0].content[1].tool" and repr(kind) in \
        info.value.message


LATER = {"name": "Later", "input_schema": {"type": "object"}, "defer_loading": True}
PARTS = {"text": TextPart, "tool_use": ToolCallPart, "tool_result": ToolResultPart,
         "thinking": ThinkingPart, "redacted_thinking": RedactedThinkingPart,
         "tool_reference": ToolsChangedPart, "tool_addition": ToolsChangedPart,
         "tool_removal": ToolsChangedPart, "server_tool_use": ServerToolCallPart,
         "web_search_tool_result": ServerToolResultPart,
         "web_fetch_tool_result": ServerToolResultPart}
SERVER_CALL = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
               "input": {"query": "q"}}
SUPPORTED_BLOCKS = {
    "text": ("user", {"type": "text", "text": "a"}),
    "tool_use": ("assistant", {"type": "tool_use", "id": "toolu_1", "name": "Read",
                               "input": {}}),
    "tool_result": ("user", {"type": "tool_result", "tool_use_id": "toolu_1"}),
    "thinking": ("assistant", {"type": "thinking", "thinking": "hm", "signature": "s"}),
    "redacted_thinking": ("assistant", {"type": "redacted_thinking", "data": "opaque"}),
    "tool_reference": ("user", {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
        {"type": "tool_reference", "tool_name": "Later"}]}),
    "tool_addition": ("user", {"type": "tool_addition", "tool": {"type": "tool_reference",
                                                                 "name": "Later"}}),
    "tool_removal": ("user", {"type": "tool_removal", "tool": {"type": "tool_reference",
                                                               "name": "Read"}}),
    "server_tool_use": ("assistant", SERVER_CALL),
    "web_search_tool_result": ("assistant", {
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://a.example", "title": "A",
             "encrypted_content": "", "page_age": None}]}),
    "web_fetch_tool_result": ("assistant", {
        "type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {
            "type": "web_fetch_result", "url": "https://a.example", "content": {
                "type": "document", "source": {"type": "text", "media_type": "text/plain",
                                               "data": "page"}}}}),
}


@pytest.mark.parametrize("kind", [r.name for r in kind_rules(policy.CONTENT_BLOCKS)
                                  if r.status == "supported"])
def test_every_supported_block_kind_reaches_the_neutral_request(kind):
    role, block = SUPPORTED_BLOCKS[kind]
    messages: list[dict[str, Any]] = [{"role": role, "content": [block]}]
    if kind in ("tool_result", "tool_reference"):
        messages.insert(0, {"role": "assistant", "content": [SUPPORTED_BLOCKS["tool_use"][1]]})
    if kind == "tool_use":
        messages.append({"role": "user", "content": [SUPPORTED_BLOCKS["tool_result"][1]]})
    if kind.endswith("_tool_result"):   # a server tool's result follows its call
        messages[0]["content"].insert(0, SERVER_CALL)
    request, _ = decode_messages_request({"model": "m", "max_tokens": 10, "messages": messages,
                                          "tools": [TOOL, LATER]})
    parts = [p for m in request.messages for p in m.parts]
    assert [type(p) for p in parts if type(p) is PARTS[kind]] == [PARTS[kind]]
