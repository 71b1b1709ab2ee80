"""Tools and tool choice, shaped after the SDK's ``ToolParam`` and ``ToolChoice*Param``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Supported, WireModel, member
from .kinds import TOOL_TYPES
from .server_tools import WebFetchToolParam, WebSearchToolParam

TOOL_NAME = r"^[a-zA-Z0-9_-]{1,128}$"


class ToolParam(WireModel):
    """A custom tool: executed by the client, its input described by ``input_schema``."""

    name: Annotated[str, Supported("1-128 characters of letters, digits, `_` and `-`; "
                                   "unique"), Field(pattern=TOOL_NAME)]
    input_schema: Annotated[dict[str, JsonValue],
                            Supported("a JSON Schema object; enforced by grammar")]
    description: Annotated[str | None, Supported("shown to the model")] = None
    type: Annotated[Literal["custom"] | None, Supported("`custom` or absent")] = None
    strict: Annotated[bool | None, Supported("inputs always follow the schema here")] = None
    cache_control: Annotated[JsonValue, Ignored("the prefix cache is automatic")] = None
    defer_loading: Annotated[bool | None, Supported(
        "`true`: left out of the prompt, and not callable, until the conversation loads it "
        "(a `tool_reference` in a `tool_result`, or a `tool_addition`); its definition is "
        "then rendered there, after the cached prefix")] = None
    eager_input_streaming: Annotated[JsonValue, Ignored("inputs always stream as they are "
                                                        "generated")] = None
    input_examples: Annotated[JsonValue, Ignored("not shown to the model")] = None
    allowed_callers: Annotated[JsonValue, Ignored("every call is direct")] = None


ToolUnionParam = Annotated[
    Annotated[ToolParam, member("custom")]
    | Annotated[WebSearchToolParam, member("web_search_20250305")]
    | Annotated[WebSearchToolParam, member("web_search_20260209")]
    | Annotated[WebSearchToolParam, member("web_search_20260318")]
    | Annotated[WebFetchToolParam, member("web_fetch_20250910")]
    | Annotated[WebFetchToolParam, member("web_fetch_20260209")]
    | Annotated[WebFetchToolParam, member("web_fetch_20260309")]
    | Annotated[WebFetchToolParam, member("web_fetch_20260318")],
    TOOL_TYPES.discriminator(default="custom")]

_PARALLEL = Supported("at most one call (auto) or exactly one (any, tool)")


class ToolChoiceAutoParam(WireModel):
    type: Annotated[Literal["auto"], Supported("the model decides")]
    disable_parallel_tool_use: Annotated[bool | None, _PARALLEL] = None


class ToolChoiceAnyParam(WireModel):
    type: Annotated[Literal["any"], Supported("some tool must be called")]
    disable_parallel_tool_use: Annotated[bool | None, _PARALLEL] = None


class ToolChoiceToolParam(WireModel):
    type: Annotated[Literal["tool"], Supported("the named tool must be called")]
    name: Annotated[str, Supported("a tool in `tools`")]
    disable_parallel_tool_use: Annotated[bool | None, _PARALLEL] = None


class ToolChoiceNoneParam(WireModel):
    type: Annotated[Literal["none"], Supported("no tool may be called")]


ToolChoiceParam = Annotated[ToolChoiceAutoParam | ToolChoiceAnyParam | ToolChoiceToolParam
                            | ToolChoiceNoneParam, Field(discriminator="type")]
