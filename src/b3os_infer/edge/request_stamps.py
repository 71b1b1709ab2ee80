"""Request id and timing on every response, errors included (pure ASGI)."""

from __future__ import annotations

import logging
import time

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import ids
from ..envelopes import error_response
from ..errors import HeadersTooLarge, InternalError
from ..http.requests import CURRENT_REQUEST_ID

log = logging.getLogger(__name__)

# Claude Code and the SDKs send a few KiB of headers; a client sending more than this is
# answered 431 in its route's shape before anything else reads them
MAX_HEADER_BYTES = 64 * 1024


def headers_too_large(scope: Scope) -> HeadersTooLarge | None:
    size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
    if size <= MAX_HEADER_BYTES:
        return None
    return HeadersTooLarge(f"the request headers take {size} bytes, more than the limit of "
                           f"{MAX_HEADER_BYTES}")


class RequestContextMiddleware:
    """Outermost layer: names the request, times it, and is the last line of defence.

    ``server-timing: total;dur=<ms>`` is the time until the response headers leave;
    for a stream that is the time to the first event.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        # A node keeps the id its edge gave the request (set by NodeGuard, outside us).
        rid = state.get("request_id") or ids.request_id()
        began = time.perf_counter()
        state["request_id"] = rid
        CURRENT_REQUEST_ID.set(rid)
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                headers["x-request-id"] = rid
                headers["request-id"] = rid
                elapsed = (time.perf_counter() - began) * 1000
                headers.append("server-timing", f"total;dur={elapsed:.3f}")
            await send(message)

        if (too_large := headers_too_large(scope)) is not None:
            response = error_response(scope["path"], too_large, rid)
            await response(scope, receive, send_with_headers)
            return
        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                return
            error = InternalError("the server failed while handling this request; "
                                  "it has been logged")
            await error_response(scope["path"], error, rid)(scope, receive, send_with_headers)
