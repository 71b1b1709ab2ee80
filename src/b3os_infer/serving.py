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

from .http.shutdown import Shutdown

log = logging.getLogger("uvicorn.error")

ENDING_SECONDS = 5.0   # after the bound: for the ended requests to send their last frames


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


def serve(app: ASGIApp, shutdown: Shutdown, host: str, port: int,
          grace_seconds: float) -> None:
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            timeout_graceful_shutdown=int(ENDING_SECONDS))
    GracefulServer(config, shutdown, grace_seconds).run()
