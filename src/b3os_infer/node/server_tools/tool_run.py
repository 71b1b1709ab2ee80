"""Running server-tool calls: the node's service (``ServerTools``, from the operator's
config) and one request's run of it (``ToolRun``: its uses and counts)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ...core import (
    FetchOutcome,
    JsonObject,
    SearchOutcome,
    ServerTool,
    ServerToolOutcome,
)
from .fetch import WebFetcher
from .search import SearchBackend, SearchQuery, SearchThrottled, SearchUnavailable, allowed_host

log = logging.getLogger(__name__)
MAX_QUERY = 500
# model steps in one request before the turn is paused (``pause_turn``), as the real API
# pauses a long server-tool loop
DEFAULT_MAX_STEPS = 10


@dataclass
class ServerTools:
    """What the operator configured: a search backend (None: searches fail as
    ``unavailable``), the fetcher (None: fetches fail so), the results a search returns and
    the model steps one request may take."""

    search: SearchBackend | None = None
    fetcher: WebFetcher | None = None
    max_results: int = 10
    max_steps: int = DEFAULT_MAX_STEPS

    def begin(self, tools: tuple[ServerTool, ...]) -> ToolRun:
        return ToolRun(self, {tool.name: tool for tool in tools})

    async def close(self) -> None:
        if self.search is not None:
            await self.search.close()


@dataclass
class ToolRun:
    service: ServerTools
    tools: dict[str, ServerTool]
    uses: dict[str, int] = field(default_factory=dict)
    searches: int = 0
    fetches: int = 0

    def runs(self, name: str) -> bool:
        return name in self.tools

    async def run(self, name: str, arguments: JsonObject) -> ServerToolOutcome:
        tool = self.tools[name]
        used = self.uses.get(name, 0)
        self.uses[name] = used + 1
        if tool.kind == "web_search":
            query = arguments.get("query")
            if tool.max_uses is not None and used >= tool.max_uses:
                return SearchOutcome(str(query or ""), error="max_uses_exceeded")
            return await self._search(tool, query)
        url = arguments.get("url")
        if tool.max_uses is not None and used >= tool.max_uses:
            return FetchOutcome(str(url or ""), error="max_uses_exceeded")
        return await self._fetch(tool, url)

    async def _search(self, tool: ServerTool, query: object) -> SearchOutcome:
        if not isinstance(query, str) or not query.strip():
            return SearchOutcome(str(query or ""), error="invalid_tool_input")
        if len(query) > MAX_QUERY:
            return SearchOutcome(query, error="query_too_long")
        backend = self.service.search
        if backend is None:
            return SearchOutcome(query, error="unavailable")
        asked = SearchQuery(query, self.service.max_results, tool.allowed_domains,
                            tool.blocked_domains, tool.location)
        try:
            hits = await backend.search(asked)
        except SearchThrottled:
            return SearchOutcome(query, error="too_many_requests")
        except SearchUnavailable as exc:
            log.warning("web search failed: %s", exc)
            return SearchOutcome(query, error="unavailable")
        self.searches += 1
        return SearchOutcome(query, tuple(hits))

    async def _fetch(self, tool: ServerTool, url: object) -> FetchOutcome:
        if not isinstance(url, str) or not url.strip():
            return FetchOutcome(str(url or ""), error="invalid_tool_input")
        fetcher = self.service.fetcher
        if fetcher is None:
            return FetchOutcome(url, error="unavailable")
        host = urlsplit(url).hostname or ""
        if not allowed_host(host, tool.allowed_domains, tool.blocked_domains):
            return FetchOutcome(url, error="url_not_allowed")
        outcome = await fetcher.fetch(url)
        if outcome.error is None:
            self.fetches += 1
            outcome = _bounded(outcome, tool.max_content_tokens)
        return outcome


def _bounded(outcome: FetchOutcome, max_tokens: int | None) -> FetchOutcome:
    """The text cut to about ``max_tokens`` tokens (four characters a token)."""
    if max_tokens is None or len(outcome.text) <= max_tokens * 4:
        return outcome
    return FetchOutcome(outcome.url, outcome.title, outcome.text[: max_tokens * 4],
                        outcome.media_type, outcome.retrieved_at)
