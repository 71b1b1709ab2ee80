"""web_fetch: one public http(s) page, read within bounds of size and time.

Each hop (the address asked for and every redirect) is checked by the ``AddressGuard``
after DNS resolution, and the connection goes to the address that was checked: the URL
is rewritten to that address, with the name kept in ``Host`` and for TLS (SNI and the
certificate check). Redirects are followed by hand, at most ``max_redirects``. The body is
read up to ``max_bytes`` (a longer one is cut there), the whole fetch within
``timeout_s``. HTML becomes its text (``html_text.py``), a PDF its pages' text
(``pdf_text.py``, read in a worker thread), other ``text/*`` stays as it is; other kinds are
refused as ``unsupported_content_type``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from ...core import FetchOutcome
from .addresses import Address, AddressGuard, AddressRefused
from .html_text import html_text
from .pdf_text import pdf_text

MAX_URL = 2048
PDF = "application/pdf"
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class FetchSettings:
    max_bytes: int = 2 * 1024 * 1024
    timeout_s: float = 15.0
    max_redirects: int = 5
    allow_networks: tuple[str, ...] = ()


class _Failed(Exception):
    def __init__(self, outcome: FetchOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


@dataclass(frozen=True)
class _Page:
    url: str
    content_type: str
    body: bytes
    charset: str


class WebFetcher:
    def __init__(self, settings: FetchSettings | None = None,
                 guard: AddressGuard | None = None) -> None:
        self.settings = settings or FetchSettings()
        self.guard = guard or AddressGuard(self.settings.allow_networks)

    async def fetch(self, url: str) -> FetchOutcome:
        if len(url) > MAX_URL:
            return FetchOutcome(url, error="url_too_long")
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                page = await self._follow(url)
        except _Failed as failed:
            return failed.outcome
        except (TimeoutError, httpx.HTTPError):
            return FetchOutcome(url, error="url_not_accessible")
        if page.content_type == PDF or page.body.startswith(b"%PDF-"):
            return await asyncio.to_thread(_read_pdf, url, page)
        return _read(url, page)

    async def _follow(self, url: str) -> _Page:
        target = _parse(url, url)
        for _ in range(self.settings.max_redirects + 1):
            address = await self._checked(url, target)
            async with _client() as client:
                page, location = await self._get(client, target, address)
            if location is None:
                return page
            target = _parse(url, str(target.join(location)))
        raise _Failed(FetchOutcome(url, error="url_not_accessible"))

    async def _checked(self, asked: str, target: httpx.URL) -> Address:
        try:
            return await self.guard.check(target.host, target.port or _port(target))
        except AddressRefused as refused:
            raise _Failed(FetchOutcome(asked, error="url_not_allowed")) from refused

    async def _get(self, client: httpx.AsyncClient, target: httpx.URL, address: Address
                   ) -> tuple[_Page, str | None]:
        host = f"[{address}]" if address.version == 6 else str(address)
        pinned = target.copy_with(host=host.strip("[]"))
        request = client.build_request(
            "GET", pinned, headers={"Host": target.netloc.decode("ascii"),
                                    "Accept": "text/html, text/*;q=0.9, */*;q=0.1"},
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {})
        response = await client.send(request, stream=True)
        try:
            if response.status_code in _REDIRECTS and "location" in response.headers:
                return _Page(str(target), "", b"", "utf-8"), response.headers["location"]
            if response.status_code >= 400:
                raise _Failed(FetchOutcome(str(target), error="url_not_accessible"))
            body = await self._body(response)
        finally:
            await response.aclose()
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        return _Page(str(target), kind, body, response.charset_encoding or "utf-8"), None

    async def _body(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= self.settings.max_bytes:
                break
        return b"".join(chunks)[: self.settings.max_bytes]


def _client() -> httpx.AsyncClient:
    # no proxies from the environment: the connection must go to the checked address
    return httpx.AsyncClient(follow_redirects=False, trust_env=False)


def _port(target: httpx.URL) -> int:
    return 443 if target.scheme == "https" else 80


def _parse(asked: str, url: str) -> httpx.URL:
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise _Failed(FetchOutcome(asked, error="invalid_tool_input")) from exc
    if target.scheme not in ("http", "https") or not target.host:
        raise _Failed(FetchOutcome(asked, error="url_not_allowed"))
    return target


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _read_pdf(asked: str, page: _Page) -> FetchOutcome:
    read = pdf_text(page.body)
    if read is None:
        return FetchOutcome(asked, error="unsupported_content_type")
    title, text = read
    return FetchOutcome(asked, title=title, text=text, retrieved_at=_now())


def _read(asked: str, page: _Page) -> FetchOutcome:
    now = _now()
    try:
        text = page.body.decode(page.charset, "replace")
    except LookupError:
        text = page.body.decode("utf-8", "replace")
    if page.content_type in ("text/html", "application/xhtml+xml"):
        title, body = html_text(text)
        return FetchOutcome(asked, title=title, text=body, retrieved_at=now)
    if page.content_type.startswith("text/") or page.content_type in ("application/json",
                                                                      ""):
        return FetchOutcome(asked, text=text, retrieved_at=now)
    return FetchOutcome(asked, error="unsupported_content_type")
