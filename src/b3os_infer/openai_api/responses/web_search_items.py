"""Server-run web searches as Responses output: ``web_search_call`` items and their
``response.web_search_call.*`` events."""

from __future__ import annotations

from pydantic import JsonValue

from ...core import (
    Part,
    SearchHit,
    SearchOutcome,
    ServerToolCall,
    ServerToolCallPart,
    ServerToolOutcome,
    ServerToolResultPart,
)
from ..wire.response_items import ResponseFunctionWebSearchParam
from ..wire.response_objects import (
    ResponseFunctionWebSearch,
    ResponseStreamEvent,
    ResponseWebSearchCallCompletedEvent,
    ResponseWebSearchCallInProgressEvent,
    ResponseWebSearchCallSearchingEvent,
    WebSearchAction,
    WebSearchSource,
)


def search_item(call: ServerToolCall, item_id: str) -> ResponseFunctionWebSearch:
    query = call.input.get("query")
    return ResponseFunctionWebSearch(
        id=item_id, status="in_progress",
        action=WebSearchAction(query=query if isinstance(query, str) else ""))


def started(item: ResponseFunctionWebSearch, index: int) -> list[ResponseStreamEvent]:
    item.status = "searching"
    return [ResponseWebSearchCallInProgressEvent(item_id=item.id, output_index=index),
            ResponseWebSearchCallSearchingEvent(item_id=item.id, output_index=index)]


def ended(item: ResponseFunctionWebSearch, index: int,
          outcome: ServerToolOutcome) -> list[ResponseStreamEvent]:
    """The search's result on its item: its sources, or ``failed``."""
    if not isinstance(outcome, SearchOutcome) or outcome.error is not None:
        item.status = "failed"
        return []
    item.status = "completed"
    item.action.sources = [WebSearchSource(url=hit.url) for hit in outcome.hits]
    return [ResponseWebSearchCallCompletedEvent(item_id=item.id, output_index=index)]


# ---- replayed: a web_search_call item sent back -----------------------------------------


def _query(action: dict[str, JsonValue]) -> str:
    query = action.get("query")
    if isinstance(query, str):
        return query
    queries = action.get("queries")
    return " ".join(q for q in queries if isinstance(q, str)) if isinstance(queries, list) \
        else ""


def _sources(action: dict[str, JsonValue]) -> list[str]:
    sources = action.get("sources")
    if not isinstance(sources, list):
        return []
    urls = [s.get("url") for s in sources if isinstance(s, dict)]
    return [url for url in urls if isinstance(url, str)]


def replayed_parts(item: ResponseFunctionWebSearchParam) -> list[Part]:
    """The search as the model's turn holds it: its call, then its result (the addresses
    it found; their titles and snippets are not in the item)."""
    query = _query(item.action)
    outcome = SearchOutcome(query, error="unavailable") if item.status == "failed" else \
        SearchOutcome(query, tuple(SearchHit(url, url, "") for url in _sources(item.action)))
    return [ServerToolCallPart(item.id, "web_search", {"query": query}),
            ServerToolResultPart(item.id, outcome)]


def searched_item(item: ResponseFunctionWebSearchParam) -> ResponseFunctionWebSearch:
    """The item as ``GET /responses/{id}/input_items`` lists it."""
    sources = [WebSearchSource(url=url) for url in _sources(item.action)]
    return ResponseFunctionWebSearch(
        id=item.id, status="failed" if item.status == "failed" else "completed",
        action=WebSearchAction(query=_query(item.action), sources=sources or None))
