"""SearXNG as the search backend: its JSON API, ``GET /search?q=…&format=json``.

SearXNG answers ``results`` with ``url``, ``title``, ``content`` and, for some engines,
``publishedDate``. It has no notion of the user's location, so ``user_location`` is not
used; it honours ``language``, which the operator may set. One allowed domain narrows the
query with ``site:`` (which SearXNG passes to the engines that know it); the domain filters
are applied to the hits in any case (``search.filtered``).
"""

from __future__ import annotations

from typing import Any

import httpx

from ...core import SearchHit
from .search import SearchQuery, SearchThrottled, SearchUnavailable, domain_of, filtered


class SearxngBackend:
    def __init__(self, url: str, *, timeout_s: float = 10.0, language: str | None = None,
                 client: httpx.AsyncClient | None = None) -> None:
        self.endpoint = url.rstrip("/") + "/search"
        self.language = language
        self._client = client or httpx.AsyncClient(timeout=timeout_s, trust_env=False)

    def params(self, query: SearchQuery) -> dict[str, str]:
        text = query.text
        if len(query.allowed_domains) == 1:
            text += f" site:{domain_of(query.allowed_domains[0])}"
        params = {"q": text, "format": "json"}
        if self.language:
            params["language"] = self.language
        return params

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        try:
            response = await self._client.get(self.endpoint, params=self.params(query))
        except httpx.HTTPError as exc:
            raise SearchUnavailable(f"SearXNG did not answer: {exc}") from exc
        if response.status_code == 429:
            raise SearchThrottled("SearXNG: too many requests")
        if response.status_code != 200:
            raise SearchUnavailable(f"SearXNG answered {response.status_code}")
        try:
            body = response.json()
        except ValueError as exc:
            raise SearchUnavailable("SearXNG answered no JSON (is format=json enabled in "
                                    "its settings.yml `search.formats`?)") from exc
        return filtered(hits_of(body), query)

    async def close(self) -> None:
        await self._client.aclose()


def hits_of(body: Any) -> list[SearchHit]:
    """The hits of a SearXNG answer; entries without an address or title are skipped."""
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise SearchUnavailable("SearXNG's answer has no `results` list")
    hits: list[SearchHit] = []
    for item in results:
        if not isinstance(item, dict):
            continue
        url, title = item.get("url"), item.get("title")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        content, published = item.get("content"), item.get("publishedDate")
        hits.append(SearchHit(url=url, title=title if isinstance(title, str) else url,
                              snippet=content if isinstance(content, str) else "",
                              page_age=published if isinstance(published, str) else None))
    return hits
