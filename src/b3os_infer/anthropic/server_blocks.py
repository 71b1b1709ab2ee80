"""Server-tool calls and results between the neutral core and the Messages API's blocks:
``server_tool_use`` and ``web_search_tool_result`` / ``web_fetch_tool_result``, out in
replies and back in from history.

A search hit's ``encrypted_content`` carries its snippet (``b3os1.`` and the base64 of its
UTF-8 text: the field is opaque to clients), so a conversation that sends the result back
renders it to the model as it first read it; another server's content, which we cannot
read, renders without a snippet.
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal, get_args

from .. import core
from ..core import FetchOutcome, SearchHit, SearchOutcome, ServerToolError
from .wire import responses as wire
from .wire.server_tools import (
    ServerToolUseBlockParam,
    WebFetchToolResultBlockParam,
    WebFetchToolResultErrorParam,
    WebSearchToolResultBlockParam,
    WebSearchToolResultErrorParam,
)

_SEARCH_CODES = frozenset(get_args(wire.SearchErrorCode))
_FETCH_CODES = frozenset(get_args(wire.FetchErrorCode))
_ALL_CODES = frozenset(get_args(ServerToolError))


def server_tool_use_id(call_id: str) -> str:
    """A call the node minted, as the Messages API spells server tool use ids."""
    return "srvtoolu_" + call_id


_SNIPPET = "b3os1."   # what marks an encrypted_content as this server's


def snippet_token(snippet: str) -> str:
    return _SNIPPET + base64.urlsafe_b64encode(snippet.encode()).decode("ascii")


def snippet_of(token: str) -> str:
    """The snippet a token of ours carries; "" for anything else."""
    if not token.startswith(_SNIPPET):
        return ""
    try:
        return base64.urlsafe_b64decode(token[len(_SNIPPET):].encode("ascii")).decode()
    except (binascii.Error, UnicodeError, ValueError):
        return ""


# ---- out: reply blocks -----------------------------------------------------------------


def call_block(call_id: str, name: str, arguments: core.JsonObject) -> wire.ServerToolUseBlock:
    kind: Literal["web_search", "web_fetch"] = "web_fetch" if name == "web_fetch" \
        else "web_search"
    return wire.ServerToolUseBlock(id=server_tool_use_id(call_id), name=kind, input=arguments)


def result_block(call_id: str, outcome: core.ServerToolOutcome
                 ) -> wire.WebSearchToolResultBlock | wire.WebFetchToolResultBlock:
    if isinstance(outcome, SearchOutcome):
        return wire.WebSearchToolResultBlock(tool_use_id=server_tool_use_id(call_id),
                                             content=_search_content(outcome))
    return wire.WebFetchToolResultBlock(tool_use_id=server_tool_use_id(call_id),
                                        content=_fetch_content(outcome))


def _search_content(outcome: SearchOutcome
                    ) -> list[wire.WebSearchResultBlock] | wire.WebSearchToolResultError:
    if outcome.error is not None:
        code = outcome.error if outcome.error in _SEARCH_CODES else "unavailable"
        return wire.WebSearchToolResultError(error_code=code)  # type: ignore[arg-type]
    return [wire.WebSearchResultBlock(url=hit.url, title=hit.title, page_age=hit.page_age,
                                      encrypted_content=snippet_token(hit.snippet))
            for hit in outcome.hits]


def _fetch_content(outcome: FetchOutcome
                   ) -> wire.WebFetchBlock | wire.WebFetchToolResultErrorBlock:
    if outcome.error is not None:
        code = outcome.error if outcome.error in _FETCH_CODES else "unavailable"
        return wire.WebFetchToolResultErrorBlock(error_code=code)  # type: ignore[arg-type]
    document = wire.DocumentBlock(source=wire.PlainTextSource(data=outcome.text),
                                  title=outcome.title)
    return wire.WebFetchBlock(url=outcome.url, content=document,
                              retrieved_at=outcome.retrieved_at)


# ---- in: history blocks ------------------------------------------------------------------


def call_part(block: ServerToolUseBlockParam) -> core.ServerToolCallPart:
    return core.ServerToolCallPart(block.id, block.name, dict(block.input))


def result_part(block: WebSearchToolResultBlockParam | WebFetchToolResultBlockParam,
                calls: dict[str, core.JsonObject]) -> core.ServerToolResultPart:
    """A result from history; ``calls``: the inputs of the calls before it, by id."""
    arguments = calls.get(block.tool_use_id, {})
    if isinstance(block, WebSearchToolResultBlockParam):
        return core.ServerToolResultPart(block.tool_use_id, _search_outcome(block, arguments))
    return core.ServerToolResultPart(block.tool_use_id, _fetch_outcome(block, arguments))


def _error(code: str) -> ServerToolError:
    return code if code in _ALL_CODES else "unavailable"  # type: ignore[return-value]


def _search_outcome(block: WebSearchToolResultBlockParam,
                    arguments: core.JsonObject) -> SearchOutcome:
    query = str(arguments.get("query", ""))
    if isinstance(block.content, WebSearchToolResultErrorParam):
        return SearchOutcome(query, error=_error(block.content.error_code))
    hits = tuple(SearchHit(hit.url, hit.title, snippet_of(hit.encrypted_content),
                           hit.page_age) for hit in block.content)
    return SearchOutcome(query, hits)


def _fetch_outcome(block: WebFetchToolResultBlockParam,
                   arguments: core.JsonObject) -> FetchOutcome:
    content = block.content
    if isinstance(content, WebFetchToolResultErrorParam):
        return FetchOutcome(str(arguments.get("url", "")), error=_error(content.error_code))
    return FetchOutcome(content.url, content.content.title, content.content.source.data)
