"""Running an app under uvicorn with a graceful shutdown (``http/shutdown.py``).

The first SIGTERM (or Ctrl-C) drains: new requests get a shaped 503, running ones go on
for up to ``grace_seconds``; then what still runs is ended with its API's error event
(or a shaped 503), and the server stops: the app's shutdown closes the engines and the
ledger. A second signal stops it at once.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from types import FrameType

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .http.shutdown import Shutdown

log = logging.getLogger("uvicorn.error")

ENDING_SECONDS = 5.0   # after the bound: for the ended requests to send their last frames
# a connection whose request head (line and headers) is larger, or has not all come in
# ``[server] head_timeout_seconds``, is closed: uvicorn itself waits for a head forever
# and holds all of it, however large
MAX_HEAD_BYTES = 1024 * 1024


class BoundedHeads(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size bound on each request head.

    (The app answers 431 in the route's shape above 64 KiB, ``edge/request_stamps.py``; this
    bounds what reaches it.)"""

    head_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is not None:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._close_head("too large")
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_bytes = 0
            self._head_timer = self.loop.call_later(self.head_timeout, self._close_head,
                                                    "timed out")

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _close_head(self, why: str) -> None:
        self._disarm()
        if not self.transport.is_closing():
            log.info("closing a connection whose request head %s", why)
            self.transport.close()


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, shutdown: Shutdown, grace_seconds: float
                 ) -> None:
        super().__init__(config)
        self.gate = shutdown   # (uvicorn.Server.shutdown is a method)
        self.grace_seconds = grace_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._signalled = False
        self._drainer: asyncio.Task[None] | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._signalled or self._loop is None:
            self.force_exit = self.should_exit = True   # a second signal: at once
            return
        self._signalled = True
        self._loop.call_soon_threadsafe(self._begin)

    def _begin(self) -> None:
        assert self._loop is not None
        self._drainer = self._loop.create_task(self._drain())

    async def _drain(self) -> None:
        running = self.gate.in_flight
        log.info("Draining: %d request(s) running, new ones refused; up to %.0f s "
                 "(signal again to stop at once)", running, self.grace_seconds)
        self.gate.drain()
        if not await self.gate.idle(self.grace_seconds):
            log.warning("Ending %d request(s) still running after %.0f s",
                        self.gate.in_flight, self.grace_seconds)
            self.gate.end()
            await self.gate.idle(ENDING_SECONDS)
        self.should_exit = True


def serve(app: ASGIApp, shutdown: Shutdown, host: str, port: int, grace_seconds: float,
          head_timeout_seconds: float = 30.0) -> None:
    protocol = type("BoundedHeads", (BoundedHeads,), {"head_timeout": head_timeout_seconds})
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            timeout_graceful_shutdown=int(ENDING_SECONDS), http=protocol)
    GracefulServer(config, shutdown, grace_seconds).run()
