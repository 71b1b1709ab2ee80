"""The seam to search backends: one query in, hits out.

A backend is configured by the operator (``[web_search]``); ``searxng.py`` is the first.
Domain filters are applied here, to every backend's hits alike, so a backend that cannot
filter still honours them; a backend that can narrow its query may do so as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from ...core import Location, SearchHit


@dataclass(frozen=True)
class SearchQuery:
    text: str
    max_results: int = 10
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    location: Location | None = None


class SearchUnavailable(Exception):
    """The backend could not answer (down, refused, or an answer we cannot read)."""


class SearchThrottled(SearchUnavailable):
    """The backend said it is asked too often (HTTP 429)."""


class SearchBackend(Protocol):
    async def search(self, query: SearchQuery) -> list[SearchHit]: ...

    async def close(self) -> None: ...


def domain_of(entry: str) -> str:
    """A domain as a caller writes it (``example.com``, ``https://Example.com/blog``) to the
    host name it matches."""
    host = urlsplit(entry if "//" in entry else "//" + entry).hostname or ""
    return host.lower().rstrip(".")


def on_domain(host: str, domains: tuple[str, ...]) -> bool:
    """``host`` is one of ``domains`` or a subdomain of one."""
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in map(domain_of, domains) if d)


def allowed_host(host: str, allowed: tuple[str, ...], blocked: tuple[str, ...]) -> bool:
    if allowed and not on_domain(host, allowed):
        return False
    return not on_domain(host, blocked)


def filtered(hits: list[SearchHit], query: SearchQuery) -> list[SearchHit]:
    kept = [hit for hit in hits if allowed_host(urlsplit(hit.url).hostname or "",
                                                query.allowed_domains, query.blocked_domains)]
    return kept[: query.max_results]
