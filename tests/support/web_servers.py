"""Small real HTTP servers for the server-tool tests, on loopback in a thread each.

``SearxngServer`` answers SearXNG's JSON API (``GET /search?q=…&format=json``) from a list
of results and keeps every query it got; ``PageServer`` serves pages by path (with a
content type, a redirect or a delay) and keeps the ``Host`` header of each request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Page:
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    location: str | None = None
    delay_s: float = 0.0


@dataclass
class Served:
    url: str
    queries: list[dict[str, list[str]]] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)


def _handler(respond: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            respond(self)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    return Handler


@contextmanager
def _serving(respond: Any) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(respond))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str,
          location: str | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    if location is not None:
        handler.send_header("Location", location)
    handler.end_headers()
    try:
        handler.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        return   # the client gave up (a fetch past its time limit)


@contextmanager
def searxng_server(results: list[dict[str, Any]], status: int = 200) -> Iterator[Served]:
    served = Served("")

    def respond(handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query)
        served.queries.append(query)
        if parts.path != "/search" or query.get("format") != ["json"]:
            _send(handler, 403, b"Forbidden", "text/plain")
            return
        body = json.dumps({"query": query.get("q", [""])[0], "results": results}).encode()
        _send(handler, status, body, "application/json")

    with _serving(respond) as url:
        served.url = url
        yield served


@contextmanager
def page_server(pages: dict[str, Page]) -> Iterator[Served]:
    served = Served("")

    def respond(handler: BaseHTTPRequestHandler) -> None:
        served.hosts.append(handler.headers.get("Host", ""))
        page = pages.get(urlsplit(handler.path).path)
        if page is None:
            _send(handler, 404, b"not found", "text/plain")
            return
        if page.delay_s:
            time.sleep(page.delay_s)
        _send(handler, page.status, page.body, page.content_type, page.location)

    with _serving(respond) as url:
        served.url = url
        yield served
