"""The door that closes when the server drains (pure ASGI, inside the request id layer).

It counts the requests in flight for ``Shutdown`` and puts it where the routes find it;
once the server drains, a new request gets a shaped 503 (b3os code ``shutting_down``,
``connection: close``), except on the paths that must stay open to finish the running
ones (an edge's accounting callbacks, which its nodes settle through).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..envelopes import error_response
from ..http.shutdown import SHUTDOWN_KEY, Shutdown, shutting_down

# on a refusal while draining, so that an edge tries another node instead
DRAINING_HEADER = "x-b3os-draining"


class ShutdownGate:
    def __init__(self, app: ASGIApp, shutdown: Shutdown, open_paths: tuple[str, ...] = ()
                 ) -> None:
        self.app = app
        self.shutdown = shutdown
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if self.shutdown.draining and not path.startswith(self.open_paths or ("\0",)):
            response = error_response(path, shutting_down(), scope["state"]["request_id"])
            response.headers["connection"] = "close"
            response.headers[DRAINING_HEADER] = "1"
            await response(scope, receive, send)
            return
        scope["state"][SHUTDOWN_KEY] = self.shutdown
        self.shutdown.entered()
        try:
            await self.app(scope, receive, send)
        finally:
            self.shutdown.left()
