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


def text_pdf(text: str, title: str) -> bytes:
    """A one-page PDF that shows ``text`` (ASCII, no parentheses) in Helvetica, with
    ``title`` in its metadata: written out by hand, cross-reference table included."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (%s) >>" % title.encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)
