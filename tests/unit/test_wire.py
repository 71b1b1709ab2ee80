"""The typed wire's base: pydantic errors become our errors with the client's paths."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field, Tag

from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.wire_models import (
    Ignored,
    Refused,
    Rule,
    Supported,
    WireModel,
    decode,
    kind_rules,
    kinds,
    member,
    policy_rules,
)

BLOCKS = kinds("content block", ("text", "supported", "plain text"),
               ("tool_use", "supported", "a call"), ("image", "refused", "text only"))


class Text(WireModel):
    type: Annotated[Literal["text"], Supported("the kind")]
    text: Annotated[str, Supported("the text")]


class ToolUse(WireModel):
    type: Annotated[Literal["tool_use"], Supported("the kind")]
    id: Annotated[str, Supported("the call id")]


Block = Annotated[Annotated[Text, member("text")] | Annotated[ToolUse, member("tool_use")],
                  BLOCKS.discriminator()]


class Turn(WireModel):
    role: Annotated[Literal["user", "assistant"], Supported("who speaks")]
    content: Annotated[str | list[Block], Supported("text or blocks")]


class Body(WireModel):
    model: Annotated[str, Supported("required")]
    max_tokens: Annotated[int, Supported("required")]
    temperature: Annotated[float | None, Supported("0 to 1")] = None
    messages: Annotated[list[Turn], Supported("required")]
    metadata: Annotated[object | None, Ignored("an opaque id")] = None
    container: Annotated[object | None, Refused("no containers")] = None
    schema_: Annotated[dict[str, object] | None, Supported("a schema"),
                       Field(alias="schema")] = None


BASE = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def with_content(*blocks: object) -> dict[str, object]:
    return {**BASE, "messages": [{"role": "user", "content": list(blocks)}]}


def refusal(body: dict[str, object]) -> UnsupportedParameter:
    with pytest.raises(UnsupportedParameter) as info:
        decode(Body, body, [BLOCKS])
    return info.value


def invalid(body: dict[str, object]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        decode(Body, body, [BLOCKS])
    assert not isinstance(info.value, UnsupportedParameter)
    return info.value


def test_a_valid_body_decodes_to_typed_values_with_ints_accepted_as_numbers():
    body = decode(Body, {**BASE, "temperature": 1, "metadata": {"user": "u"},
                         "schema": {"type": "object"}})
    assert body.temperature == 1.0 and isinstance(body.temperature, float)
    assert body.messages[0].content == "hi"
    assert body.schema_ == {"type": "object"}
    assert body.metadata == {"user": "u"}


@pytest.mark.parametrize("value", ["5", True, 5.5])
def test_wrong_json_types_are_not_coerced(value):
    error = invalid({**BASE, "max_tokens": value})
    assert error.param == "max_tokens" and "valid integer" in error.message


def test_a_missing_field_names_itself():
    error = invalid({k: v for k, v in BASE.items() if k != "model"})
    assert (error.param, error.message) == ("model", "model: Field required")


def test_an_unknown_field_is_refused_by_its_path():
    error = refusal({**BASE, "foo": 1})
    assert error.param == "foo" and "Extra inputs are not permitted" in error.message


def test_a_refused_field_is_refused_with_its_reason_but_null_is_accepted():
    error = refusal({**BASE, "container": {"id": "c"}})
    assert error.param == "container" and "no containers" in error.message
    assert decode(Body, {**BASE, "container": None}).container is None


def test_a_refused_block_type_names_the_block_and_the_reason():
    error = refusal(with_content({"type": "text", "text": "a"}, {"type": "image"}))
    assert error.param == "messages[0].content[1]"
    assert "'image'" in error.message and "text only" in error.message


def test_an_unknown_block_type_is_refused_as_unknown():
    error = refusal(with_content({"type": "hologram"}))
    assert error.param == "messages[0].content[0]" and "unknown content block" in error.message


def test_union_branch_and_tag_names_never_reach_the_path():
    assert invalid(with_content({"type": "text", "text": 5})).param == \
        "messages[0].content[0].text"
    assert refusal(with_content({"type": "text", "text": "a", "cache": 1})).param == \
        "messages[0].content[0].cache"
    assert invalid(with_content({"type": "tool_use"})).param == "messages[0].content[0].id"
    assert invalid(with_content({"text": "a"})).param == "messages[0].content[0].type"


def test_a_value_that_fits_no_branch_of_a_union_lists_what_would():
    error = invalid({**BASE, "messages": [{"role": "user", "content": 5}]})
    assert error.param == "messages[0].content"
    assert error.message == ("messages[0].content: Input should be a valid string or a "
                             "valid list")


def test_refusals_win_over_other_errors_in_the_same_body():
    error = refusal({"container": {}, "max_tokens": "x"})
    assert error.param == "container"


def test_the_policy_rules_are_read_off_the_markers_by_wire_name():
    rules = {r.name: r for r in policy_rules(Body)}
    assert rules["schema"] == Rule("schema", "supported", "a schema")
    assert rules["metadata"].status == "ignored" and rules["container"].status == "refused"
    assert [r.name for r in kind_rules(BLOCKS) if r.status == "refused"] == ["image"]


def test_a_field_without_a_marker_is_an_error_in_the_model():
    class Unmarked(WireModel):
        name: str

    with pytest.raises(TypeError, match="Unmarked.name"):
        policy_rules(Unmarked)


TOOLS = kinds("tool", ("custom", "supported", "a client tool"), ("bash_*", "refused", "built in"))


class Auto(WireModel):
    type: Annotated[Literal["auto"], Supported("the mode")]


class Never(WireModel):
    type: Annotated[Literal["none"], Supported("the mode")]


class Custom(WireModel):
    type: Annotated[Literal["custom"] | None, Supported("the kind")] = None
    name: Annotated[str, Supported("the name")]


TextOnly = Annotated[Annotated[Text, member("text")], BLOCKS.discriminator()]


class Request(WireModel):
    system: Annotated[list[TextOnly] | None, Supported("text blocks")] = None
    blocks: Annotated[list[Block] | None, Supported("blocks")] = None
    tools: Annotated[list[Annotated[Annotated[Custom, member("custom")],
                                    TOOLS.discriminator(default="custom")]] | None,
                     Supported("tools")] = None
    choice: Annotated[Annotated[Auto | Never, Field(discriminator="type")] | None,
                      Supported("a mode")] = None
    turn: Annotated[Annotated[Turn, Field(discriminator="role")] | None, Supported("a turn")] \
        = None


def request_error(body: dict[str, object]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        decode(Request, body, [BLOCKS, TOOLS])
    return info.value


def test_an_unknown_kind_is_refused_by_the_table_of_its_union():
    error = request_error({"tools": [{"type": "nonsense", "name": "x"}]})
    assert isinstance(error, UnsupportedParameter) and error.param == "tools[0]"
    assert "tools of type 'nonsense'" in error.message and "unknown tool type" in error.message


def test_a_missing_or_null_kind_takes_the_tables_default():
    body = decode(Request, {"tools": [{"name": "a"}, {"type": None, "name": "b"}]},
                  [BLOCKS, TOOLS])
    assert [t.name for t in body.tools or []] == ["a", "b"]


def test_a_served_kind_where_the_union_takes_others_names_the_kinds_it_may_be():
    error = request_error({"system": [{"type": "tool_use", "id": "x"}]})
    assert not isinstance(error, UnsupportedParameter)
    assert (error.param, error.message) == ("system[0].type",
                                            "system[0].type: Input should be 'text'")


def test_a_value_no_member_has_names_the_key_and_the_values_it_may_be():
    error = request_error({"choice": {"type": "sometimes"}})
    assert (error.param, error.message) == ("choice.type",
                                            "choice.type: Input should be 'auto' or 'none'")


def test_a_missing_discriminator_is_named_by_its_own_key():
    assert request_error({"turn": {"content": "hi"}}).param == "turn.role"
    assert request_error({"choice": {}}).param == "choice.type"


def test_a_non_object_where_an_object_belongs_says_so_without_class_names():
    for body, param in [({"blocks": ["hi"]}, "blocks[0]"), ({"choice": "auto"}, "choice"),
                        ({"turn": "hi"}, "turn")]:
        error = request_error(body)
        assert (error.param, error.message) == (param, f"{param}: Input should be an object")


ROLES = kinds("message", ("user", "supported", "asks"), ("assistant", "supported", "answers"),
              ("function", "refused", "deprecated"), key="role", at="role")


class Asked(WireModel):
    role: Annotated[Literal["user"], Supported("who")]
    content: Annotated[str, Supported("what")]


class Answered(WireModel):
    role: Annotated[Literal["assistant"], Supported("who")]
    content: Annotated[str | None, Supported("what")] = None


Said = Annotated[Annotated[Asked, member("user")] | Annotated[Answered, member("assistant")],
                 ROLES.discriminator()]
Mode = Annotated[Annotated[Literal["auto", "none"], Tag("mode")]
                 | Annotated[ToolUse, member("tool_use")], BLOCKS.discriminator(plain="mode")]


class Chat(WireModel):
    messages: Annotated[list[Said], Supported("the turns")]
    choice: Annotated[Mode | None, Supported("a mode or a named call")] = None


def chat_error(body: dict[str, object]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        decode(Chat, body, [ROLES, BLOCKS])
    return info.value


def test_a_union_keyed_on_role_names_a_missing_or_mistyped_role():
    missing = chat_error({"messages": [{"content": "x"}]})
    assert (missing.param, missing.message) == ("messages[0].role",
                                                "messages[0].role: Field required")
    mistyped = chat_error({"messages": [{"role": 5, "content": "x"}]})
    assert mistyped.param == "messages[0].role" and "valid string" in mistyped.message


def test_a_refused_role_is_refused_at_its_key():
    error = chat_error({"messages": [{"role": "function", "content": "x"}]})
    assert isinstance(error, UnsupportedParameter)
    assert error.param == "messages[0].role" and "deprecated" in error.message


def test_a_member_that_is_not_an_object_says_so():
    error = chat_error({"messages": ["hi"]})
    assert (error.param, error.message) == ("messages[0]",
                                            "messages[0]: Input should be an object")


def test_a_plain_member_takes_the_values_that_are_not_objects():
    assert decode(Chat, {"messages": [], "choice": "auto"}).choice == "auto"
    chosen = decode(Chat, {"messages": [], "choice": {"type": "tool_use", "id": "t"}})
    assert isinstance(chosen.choice, ToolUse)
    error = chat_error({"messages": [], "choice": "always"})
    assert error.param == "choice" and "'auto' or 'none'" in error.message


FORMATS = kinds("response format", ("text", "supported", "plain"), at="type")


class Plain(WireModel):
    type: Annotated[Literal["text"], Supported("the kind")]


class Formatted(WireModel):
    messages: Annotated[list[Said], Supported("the turns")]
    format: Annotated[Annotated[Annotated[Plain, member("text")], FORMATS.discriminator()]
                      | None, Supported("the format")] = None


def test_a_refusal_is_told_by_the_table_whose_union_refused_it():
    with pytest.raises(UnsupportedParameter) as info:
        decode(Formatted, {"messages": [], "format": {"type": "image"}}, [BLOCKS, FORMATS])
    assert info.value.param == "format.type"
    assert "response formats of type 'image'" in info.value.message
