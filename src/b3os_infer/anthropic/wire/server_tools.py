"""Server tools on the wire: the tool params (``web_search_*``, ``web_fetch_*``) and the
blocks a conversation sends back (``server_tool_use`` and the result blocks), shaped after
the SDK's ``WebSearchTool*Param``, ``WebFetchTool*Param``, ``ServerToolUseBlockParam``,
``WebSearchToolResultBlockParam`` and ``WebFetchToolResultBlockParam``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Supported, WireModel

_CACHE = Ignored("the prefix cache is automatic")
_CALLERS = Ignored("every call is direct")
_DEFER = Ignored("server tools are always offered")
_STRICT = Ignored("the call's input is checked when the tool runs")
_INCLUSION = Ignored("results are always returned in full: there is no code execution here")
_MAX_USES = Supported("calls past it get a `max_uses_exceeded` result; the turn goes on")
_ALLOWED = Supported("results (search) or addresses (fetch) only from these domains and "
                     "their subdomains; not with `blocked_domains`")
_BLOCKED = Supported("never results or addresses from these domains and their subdomains")

SearchToolType = Literal["web_search_20250305", "web_search_20260209", "web_search_20260318"]
FetchToolType = Literal["web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309",
                        "web_fetch_20260318"]


class UserLocationParam(WireModel):
    type: Annotated[Literal["approximate"], Supported("the kind")]
    city: Annotated[str | None, Supported("passed to backends that use it")] = None
    region: Annotated[str | None, Supported("passed to backends that use it")] = None
    country: Annotated[str | None, Supported("passed to backends that use it")] = None
    timezone: Annotated[str | None, Supported("passed to backends that use it")] = None


class WebSearchToolParam(WireModel):
    """Web search, run on the node through the operator's search backend."""

    type: Annotated[SearchToolType, Supported("any version: they run the same here")]
    name: Annotated[Literal["web_search"], Supported("the function the model calls")]
    max_uses: Annotated[int | None, _MAX_USES, Field(ge=1)] = None
    allowed_domains: Annotated[list[str] | None, _ALLOWED] = None
    blocked_domains: Annotated[list[str] | None, _BLOCKED] = None
    user_location: Annotated[UserLocationParam | None, Supported(
        "given to the backend; SearXNG has no use for it")] = None
    response_inclusion: Annotated[JsonValue, _INCLUSION] = None
    cache_control: Annotated[JsonValue, _CACHE] = None
    allowed_callers: Annotated[JsonValue, _CALLERS] = None
    defer_loading: Annotated[JsonValue, _DEFER] = None
    strict: Annotated[JsonValue, _STRICT] = None


class WebFetchToolParam(WireModel):
    """Web fetch, run on the node: public http(s) addresses only."""

    type: Annotated[FetchToolType, Supported("any version: they run the same here")]
    name: Annotated[Literal["web_fetch"], Supported("the function the model calls")]
    max_uses: Annotated[int | None, _MAX_USES, Field(ge=1)] = None
    allowed_domains: Annotated[list[str] | None, _ALLOWED] = None
    blocked_domains: Annotated[list[str] | None, _BLOCKED] = None
    max_content_tokens: Annotated[int | None, Supported(
        "the page's text is cut to about this many tokens"), Field(ge=1)] = None
    citations: Annotated[JsonValue, Ignored("citations are not produced: the document comes "
                                            "back without them")] = None
    use_cache: Annotated[JsonValue, Ignored("pages are always fetched anew")] = None
    url_sources: Annotated[JsonValue, Ignored(
        "any public address may be fetched, whether or not the conversation named it "
        "(narrow it with `allowed_domains`)")] = None
    response_inclusion: Annotated[JsonValue, _INCLUSION] = None
    cache_control: Annotated[JsonValue, _CACHE] = None
    allowed_callers: Annotated[JsonValue, _CALLERS] = None
    defer_loading: Annotated[JsonValue, _DEFER] = None
    strict: Annotated[JsonValue, _STRICT] = None


# ---- blocks sent back in assistant turns ---------------------------------------------


class ServerToolUseBlockParam(WireModel):
    type: Annotated[Literal["server_tool_use"], Supported("the kind")]
    id: Annotated[str, Supported("answered by the result block with this `tool_use_id`")]
    name: Annotated[str, Supported("the server tool called")]
    input: Annotated[dict[str, JsonValue], Supported("the call's arguments")]
    caller: Annotated[JsonValue, _CALLERS] = None
    cache_control: Annotated[JsonValue, _CACHE] = None


class WebSearchResultBlockParam(WireModel):
    type: Annotated[Literal["web_search_result"], Supported("the kind")]
    url: Annotated[str, Supported("rendered back")]
    title: Annotated[str, Supported("rendered back")]
    encrypted_content: Annotated[str, Supported(
        "the snippet, as this server wrote it; another server's is not readable here")]
    page_age: Annotated[str | None, Supported("rendered back")] = None


class WebSearchToolResultErrorParam(WireModel):
    type: Annotated[Literal["web_search_tool_result_error"], Supported("the kind")]
    error_code: Annotated[str, Supported("rendered back")]


class WebSearchToolResultBlockParam(WireModel):
    type: Annotated[Literal["web_search_tool_result"], Supported("the kind")]
    tool_use_id: Annotated[str, Supported("the `server_tool_use` it answers")]
    content: Annotated[list[WebSearchResultBlockParam] | WebSearchToolResultErrorParam,
                       Supported("the results, or the error")]
    caller: Annotated[JsonValue, _CALLERS] = None
    cache_control: Annotated[JsonValue, _CACHE] = None


class PlainTextSourceParam(WireModel):
    type: Annotated[Literal["text"], Supported("the kind")]
    media_type: Annotated[Literal["text/plain"], Supported("the kind of text")]
    data: Annotated[str, Supported("rendered back")]


class FetchedDocumentParam(WireModel):
    type: Annotated[Literal["document"], Supported("the kind")]
    source: Annotated[PlainTextSourceParam, Supported("the page's text")]
    title: Annotated[str | None, Supported("rendered back")] = None
    citations: Annotated[JsonValue, Ignored("citations are not produced")] = None
    context: Annotated[JsonValue, Ignored("not rendered")] = None


class WebFetchResultParam(WireModel):
    type: Annotated[Literal["web_fetch_result"], Supported("the kind")]
    url: Annotated[str, Supported("rendered back")]
    content: Annotated[FetchedDocumentParam, Supported("the page, as text")]
    retrieved_at: Annotated[str | None, Ignored("not rendered")] = None


class WebFetchToolResultErrorParam(WireModel):
    type: Annotated[Literal["web_fetch_tool_result_error"], Supported("the kind")]
    error_code: Annotated[str, Supported("rendered back")]


class WebFetchToolResultBlockParam(WireModel):
    type: Annotated[Literal["web_fetch_tool_result"], Supported("the kind")]
    tool_use_id: Annotated[str, Supported("the `server_tool_use` it answers")]
    content: Annotated[WebFetchResultParam | WebFetchToolResultErrorParam,
                       Field(discriminator="type"), Supported("the page, or the error")]
    caller: Annotated[JsonValue, _CALLERS] = None
    cache_control: Annotated[JsonValue, _CACHE] = None
