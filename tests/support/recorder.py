"""A loopback proxy in front of the server that keeps every request and the status and body
of every answer that is not a stream, so a test can say which requests were refused and why.
Streams pass through chunk by chunk, as the client reads them."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Exchange:
    method: str
    path: str
    body: dict[str, Any] | None
    status: int = 0
    answer: dict[str, Any] | None = None


@dataclass
class Recording:
    upstream: str
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refused(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.status >= 400]


class _Forward(BaseHTTPRequestHandler):
    server: _ProxyServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        self._forward()

    def do_POST(self) -> None:  # noqa: N802
        self._forward()

    def _forward(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        exchange = Exchange(self.command, self.path, json.loads(raw) if raw else None)
        with self.server.recording.lock:
            self.server.recording.exchanges.append(exchange)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        with httpx.Client(timeout=None) as client, client.stream(
                self.command, self.server.recording.upstream + self.path, content=raw,
                headers=headers) as answer:
            exchange.status = answer.status_code
            self.send_response(answer.status_code)
            for name, value in answer.headers.items():
                if name.lower() not in _HOP:
                    self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            streamed = "text/event-stream" in answer.headers.get("content-type", "")
            kept = bytearray()
            for chunk in answer.iter_raw():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                if not streamed:
                    kept += chunk
            self.wfile.write(b"0\r\n\r\n")
            if kept and answer.status_code >= 400:
                exchange.answer = json.loads(kept)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, recording: Recording) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.recording = recording


class RecordingProxy:
    """``with RecordingProxy(upstream) as proxy:`` the proxy's root is ``proxy.root``."""

    def __init__(self, upstream: str) -> None:
        self.recording = Recording(upstream.rstrip("/"))
        self._server = _ProxyServer(self.recording)
        self.root = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
