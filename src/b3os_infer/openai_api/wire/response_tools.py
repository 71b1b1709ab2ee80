"""The tools of a Responses request (function, custom, namespace, web search) and
``tool_choice``, named after the SDK's ``FunctionToolParam``, ``CustomToolParam``, ..."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, JsonValue, Tag

from ...wire_models import Ignored, Supported, WireModel, member
from .response_kinds import CUSTOM_FORMATS, NAMESPACE_TOOLS, RESPONSE_TOOLS, TOOL_CHOICES
from .tools import FunctionName, ToolChoiceMode

DEFERRED = "every tool is in the prompt from the start"


class FunctionToolParam(WireModel):
    type: Annotated[Literal["function"], Supported("`function`")]
    name: Annotated[FunctionName, Supported("1 to 64 letters, digits, `_` or `-`; unique")]
    description: Annotated[str | None, Supported("shown to the model")] = None
    parameters: Annotated[dict[str, JsonValue] | None, Supported(
        "a JSON Schema object the arguments follow; absent means no arguments")] = None
    strict: Annotated[bool | None, Ignored(
        "arguments follow `parameters` by construction where the engine applies "
        "grammars")] = None
    defer_loading: Annotated[bool | None, Ignored(DEFERRED)] = None


class CustomToolFormatText(WireModel):
    type: Annotated[Literal["text"], Supported("`text`")]


class CustomToolFormatGrammar(WireModel):
    type: Annotated[Literal["grammar"], Supported("`grammar`")]
    syntax: Annotated[Literal["lark", "regex"], Ignored("the grammar is not enforced")]
    definition: Annotated[str, Ignored("the grammar is not enforced")]


CustomToolFormat = Annotated[
    Annotated[CustomToolFormatText, member("text")]
    | Annotated[CustomToolFormatGrammar, member("grammar")],
    CUSTOM_FORMATS.discriminator()]


class CustomToolParam(WireModel):
    type: Annotated[Literal["custom"], Supported("`custom`")]
    name: Annotated[FunctionName, Supported("unique among the tools")]
    description: Annotated[str | None, Supported("shown to the model")] = None
    format: Annotated[CustomToolFormat | None, Supported(
        "`text`, or a `grammar` that is accepted and not enforced")] = None
    defer_loading: Annotated[bool | None, Ignored(DEFERRED)] = None


NamespaceMember = Annotated[
    Annotated[FunctionToolParam, member("function")]
    | Annotated[CustomToolParam, member("custom")],
    NAMESPACE_TOOLS.discriminator()]


class NamespaceToolParam(WireModel):
    type: Annotated[Literal["namespace"], Supported("`namespace`")]
    name: Annotated[FunctionName, Supported("the namespace, written before its tools' "
                                            "names")]
    description: Annotated[str | None, Supported("shown to the model with each tool")
                           ] = None
    tools: Annotated[list[NamespaceMember], Supported("function and custom tools")]


class WebSearchFilters(WireModel):
    model_config = ConfigDict(extra="ignore")

    allowed_domains: Annotated[list[str] | None, Supported(
        "results only from these domains and their subdomains")] = None


class WebSearchLocation(WireModel):
    model_config = ConfigDict(extra="ignore")

    type: Annotated[Literal["approximate"] | None, Supported("`approximate`")] = None
    city: Annotated[str | None, Supported("given to the backend")] = None
    region: Annotated[str | None, Supported("given to the backend")] = None
    country: Annotated[str | None, Supported("given to the backend")] = None
    timezone: Annotated[str | None, Supported("given to the backend")] = None


class WebSearchToolParam(WireModel):
    """Run on this server through the operator's search backend; left out of the prompt
    where there is none (Codex declares it by default). Fields of its own that Codex adds
    are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    type: Annotated[str, Supported("`web_search` and its dated and preview forms")]
    filters: Annotated[WebSearchFilters | None, Supported("`allowed_domains`")] = None
    user_location: Annotated[WebSearchLocation | None, Supported(
        "given to the backend; SearXNG has no use for it")] = None
    search_context_size: Annotated[JsonValue, Ignored(
        "every result's snippet is given to the model")] = None
    external_web_access: Annotated[JsonValue, Ignored(
        "the backend decides where its results come from")] = None


ToolParam = Annotated[
    Annotated[FunctionToolParam, member("function")]
    | Annotated[CustomToolParam, member("custom")]
    | Annotated[NamespaceToolParam, member("namespace")]
    | Annotated[WebSearchToolParam, member("web_search")]
    | Annotated[WebSearchToolParam, member("web_search_preview")]
    | Annotated[WebSearchToolParam, member("web_search_preview_2025_03_11")]
    | Annotated[WebSearchToolParam, member("web_search_2025_08_26")],
    RESPONSE_TOOLS.discriminator()]


class ToolChoiceFunctionParam(WireModel):
    type: Annotated[Literal["function"], Supported("`function`")]
    name: Annotated[str, Supported("a function in `tools`")]


class ToolChoiceCustomParam(WireModel):
    type: Annotated[Literal["custom"], Supported("`custom`")]
    name: Annotated[str, Supported("a custom tool in `tools`")]


class ToolChoiceAllowedParam(WireModel):
    type: Annotated[Literal["allowed_tools"], Supported("`allowed_tools`")]
    mode: Annotated[Literal["auto", "required"], Supported(
        "auto: the model may call one of the listed tools; required: it must")]
    tools: Annotated[list[dict[str, JsonValue]], Supported(
        "the tools offered, by `type` and `name` (and `namespace`): function and custom "
        "tools of `tools`; a web search entry keeps the search offered where it runs")]


ToolChoiceParam = Annotated[
    Annotated[ToolChoiceMode, Tag("mode")]
    | Annotated[ToolChoiceFunctionParam, member("function")]
    | Annotated[ToolChoiceCustomParam, member("custom")]
    | Annotated[ToolChoiceAllowedParam, member("allowed_tools")],
    TOOL_CHOICES.discriminator(plain="mode")]
