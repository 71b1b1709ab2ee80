"""A minimal HTTP/1.1 client for the one-token request.

The latency a server's layers add is measured as the time of a whole request at the
client minus the same work in process. A general-purpose client (httpx) spends about a
millisecond of its own per request on these 2 cores, the same for both servers; that is
neither server's layer, so this client does as little as HTTP allows: one kept-alive
connection, the request bytes prepared once, the reply read by its Content-Length.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from urllib.parse import urlsplit


class WireError(RuntimeError):
    pass


class Connection:
    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self.headers = headers
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Connection:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._writer is not None:
            self._writer.close()

    def request(self, body: bytes) -> bytes:
        """The bytes of one POST of a JSON ``body``; built once, sent many times."""
        lines = [f"POST {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Content-Type: application/json", f"Content-Length: {len(body)}",
                 *(f"{name}: {value}" for name, value in self.headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send one prepared request; the status and the whole body of the reply."""
        assert self._reader is not None and self._writer is not None, "not connected"
        self._writer.write(request)
        head = await self._reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        length = None
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            elif name.strip().lower() == "transfer-encoding":
                raise WireError(f"the reply is {value.strip()}; only Content-Length is read")
        if length is None:
            raise WireError("the reply has no Content-Length")
        return status, await self._reader.readexactly(length)
