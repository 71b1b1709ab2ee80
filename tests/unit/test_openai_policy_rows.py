"""Every row of the OpenAI policy tables behaves as labelled: an ignored field or kind
decodes and leaves the neutral request as it was; a refused one is refused naming its
path; every model of the wire has a policy marker on every field."""

from __future__ import annotations

import inspect

import pytest

from b3os_infer.errors import UnsupportedParameter
from b3os_infer.openai_api import policy
from b3os_infer.openai_api.completions import decode_completion_request
from b3os_infer.openai_api.decode import decode_chat_request
from b3os_infer.openai_api.wire import (
    chat,
    common,
    completions,
    content,
    embeddings,
    messages,
    tools,
)
from b3os_infer.wire_models import WireModel, policy_rules

USER = {"role": "user", "content": "Hi"}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOL = {"type": "function", "function": {"name": "f"}}
# a conversation with one message of each role, by its index
BY_ROLE = {"system": 0, "developer": 1, "user": 2, "assistant": 3, "tool": 4}
# a value of the right shape for each field that a table ignores or refuses
SAMPLES = {
    "user": "u1", "safety_identifier": "s", "metadata": {"k": "v"}, "store": True,
    "service_tier": "auto", "prompt_cache_key": "k", "prompt_cache_retention": "24h",
    "prompt_cache_options": {"mode": "implicit"}, "verbosity": "low",
    "modalities": ["text"], "prediction": {"type": "content", "content": "x"},
    "audio": {"id": "a"}, "web_search_options": {}, "moderation": {"model": "m"},
    "functions": [{"name": "f"}], "function_call": {"name": "f", "arguments": "{}"},
    "suffix": "x", "name": "ann", "refusal": "no", "strict": True,
    "description": "about it", "include_obfuscation": True,
    "prompt_cache_breakpoint": {"mode": "explicit"},
}


def conversation() -> list[dict[str, object]]:
    return [{"role": "system", "content": "a"}, {"role": "developer", "content": "b"},
            USER, {"role": "assistant", "content": "ok", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}]


def chat_body(**changes: object) -> dict[str, object]:
    return {"model": "m", "messages": conversation(), "tools": [TOOL], **changes}


def refused_at(body: dict[str, object], decoder=decode_chat_request) -> str | None:
    with pytest.raises(UnsupportedParameter) as info:
        decoder(body)
    return info.value.param


def rows(table, status):
    return [r.name for r in table if r.status == status]


def test_every_ignored_or_refused_row_has_a_sample():
    tables = [policy.CHAT_FIELDS, policy.COMPLETIONS_FIELDS, policy.STREAM_OPTIONS,
              policy.TEXT_PART_FIELDS, policy.FUNCTION_FIELDS, policy.JSON_SCHEMA_FIELDS,
              *policy.MESSAGE_FIELDS.values()]
    wanted = {r.name for t in tables for r in t if r.status != "supported"}
    assert wanted <= set(SAMPLES)


@pytest.mark.parametrize("name", rows(policy.CHAT_FIELDS, "ignored"))
def test_an_ignored_chat_field_leaves_the_request_as_it_was(name):
    assert decode_chat_request(chat_body(**{name: SAMPLES[name]})) == \
        decode_chat_request(chat_body())


@pytest.mark.parametrize("name", rows(policy.CHAT_FIELDS, "refused"))
def test_a_refused_chat_field_is_refused_by_its_name(name):
    assert refused_at(chat_body(**{name: SAMPLES[name]})) == name


def test_the_ignored_and_refused_legacy_fields():
    base = {"model": "m", "prompt": "x"}
    assert decode_completion_request({**base, "user": "u"}) == decode_completion_request(base)
    for name in rows(policy.COMPLETIONS_FIELDS, "refused"):
        assert refused_at({**base, name: SAMPLES[name]}, decode_completion_request) == name


@pytest.mark.parametrize("role, name", [(role, r.name) for role, table in
                                        policy.MESSAGE_FIELDS.items() for r in table
                                        if r.status == "ignored"])
def test_an_ignored_message_field_leaves_the_request_as_it_was(role, name):
    changed = conversation()
    changed[BY_ROLE[role]][name] = SAMPLES[name]
    assert decode_chat_request(chat_body(messages=changed)) == \
        decode_chat_request(chat_body())


@pytest.mark.parametrize("role, name", [(role, r.name) for role, table in
                                        policy.MESSAGE_FIELDS.items() for r in table
                                        if r.status == "refused"])
def test_a_refused_message_field_is_refused_at_its_path(role, name):
    changed = conversation()
    changed[BY_ROLE[role]][name] = SAMPLES[name]
    assert refused_at(chat_body(messages=changed)) == f"messages[{BY_ROLE[role]}].{name}"


def test_ignored_fields_of_nested_objects_leave_the_request_as_it_was():
    text = [{"type": "text", "text": "Hi", "prompt_cache_breakpoint": {"mode": "explicit"}}]
    strict_tool = {"type": "function", "function": {"name": "f", "strict": True}}
    schema = {"name": "x", "description": "d", "strict": True, "schema": {"type": "object"}}
    plain_schema = {"name": "y", "schema": {"type": "object"}}
    pairs = [
        (chat_body(messages=[{"role": "user", "content": text}]),
         chat_body(messages=[USER])),
        (chat_body(tools=[strict_tool]), chat_body()),
        (chat_body(response_format={"type": "json_schema", "json_schema": schema}),
         chat_body(response_format={"type": "json_schema", "json_schema": plain_schema})),
        (chat_body(stream_options={"include_usage": True, "include_obfuscation": True}),
         chat_body(stream_options={"include_usage": True})),
    ]
    for changed, base in pairs:
        assert decode_chat_request(changed) == decode_chat_request(base)


def test_an_ignored_content_part_kind_is_dropped():
    parts = [{"type": "refusal", "refusal": "no"}, {"type": "text", "text": "ok"}]
    changed = conversation()
    changed[3]["content"] = parts
    assert decode_chat_request(chat_body(messages=changed)) == \
        decode_chat_request(chat_body())


@pytest.mark.parametrize("kind", rows(policy.CONTENT_PARTS, "refused"))
def test_a_refused_content_part_is_refused_at_its_index(kind):
    message = {"role": "user", "content": [{"type": "text", "text": "a"},
                                           {"type": kind, kind: {}}]}
    assert refused_at(chat_body(messages=[message])) == "messages[0].content[1]"


@pytest.mark.parametrize("kind", rows(policy.MESSAGE_ROLES, "refused"))
def test_a_refused_role_is_refused_at_the_role(kind):
    assert refused_at(chat_body(messages=[{"role": kind, "content": "x"}])) == \
        "messages[0].role"


@pytest.mark.parametrize("kind", rows(policy.TOOL_TYPES, "refused"))
def test_a_refused_tool_type_is_refused_at_its_type(kind):
    assert refused_at(chat_body(tools=[{"type": kind, kind: {}}])) == "tools[0].type"


@pytest.mark.parametrize("kind", rows(policy.TOOL_CALL_TYPES, "refused"))
def test_a_refused_tool_call_type_is_refused_at_its_type(kind):
    changed = conversation()
    changed[3]["tool_calls"] = [{"id": "c1", "type": kind, kind: {}}]
    assert refused_at(chat_body(messages=changed)) == "messages[3].tool_calls[0].type"


@pytest.mark.parametrize("kind", rows(policy.TOOL_CHOICE_TYPES, "refused"))
def test_a_refused_tool_choice_type_is_refused_at_its_type(kind):
    assert refused_at(chat_body(tool_choice={"type": kind, kind: {}})) == "tool_choice.type"


def test_an_unknown_response_format_is_refused_at_its_type():
    assert refused_at(chat_body(response_format={"type": "xml"})) == "response_format.type"


def test_every_wire_model_marks_every_field():
    modules = [chat, common, completions, content, embeddings, messages, tools]
    models = {m for module in modules for _, m in inspect.getmembers(module, inspect.isclass)
              if issubclass(m, WireModel) and m is not WireModel}
    assert len(models) >= 15
    for model in models:
        policy_rules(model)  # raises for a field without exactly one marker
