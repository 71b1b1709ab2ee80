"""The node's front door (pure ASGI): only requests forwarded by an edge get in.

A forwarded request carries the shared secret, the edge's request id, and the URL where
the edge admits and settles it; the routes reach that URL through ``RemoteAccounting``
(and the key's stored responses through ``RemoteResponses``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import httpx
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import ids
from ..core import Usage
from ..envelopes import error_response
from ..errors import AuthenticationFailed, Overloaded
from ..http.accounting import ACCOUNTING_KEY
from ..http.stored_responses import STORE_KEY
from .fleet import (
    ACCOUNTING_HEADER,
    REQUEST_ID_HEADER,
    SECRET_HEADER,
    error_from_wire,
    secret_matches,
)
from .stored_responses import RemoteResponses

log = logging.getLogger(__name__)


class NodeGuard:
    def __init__(self, app: ASGIApp, secret: str) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not secret_matches(headers.get(SECRET_HEADER), self.secret):
            error = AuthenticationFailed("this node answers only requests forwarded by a "
                                         "B3OS edge; send your request to the edge",
                                         code="not_from_edge")
            rid = ids.request_id()
            response = error_response(scope["path"], error, rid)
            response.headers["x-request-id"] = response.headers["request-id"] = rid
            await response(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["request_id"] = headers.get(REQUEST_ID_HEADER) or ids.request_id()
        if url := headers.get(ACCOUNTING_HEADER):
            state[ACCOUNTING_KEY] = RemoteAccounting(url, self.secret)
            state[STORE_KEY] = RemoteResponses(url, self.secret)
        await self.app(scope, receive, send)


class RemoteAccounting:
    """Admits and settles at the edge that forwarded the request."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.secret = secret

    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None:
        # Waiting for a slot in the edge's queue can take a while: no read timeout.
        response = await self._post("admit", {"model": model_id, "input_tokens": input_tokens,
                                              "max_tokens": max_tokens}, read_timeout=None)
        if response.status_code != 200:
            raise error_from_wire(response.json())

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        try:
            await self._post("settle", {"model": model_id,
                                        "usage": asdict(usage) if usage else None},
                             read_timeout=10)
        except Overloaded:
            log.warning("could not settle at %s; the edge settles it itself", self.url)

    async def _post(self, action: str, payload: dict[str, object],
                    read_timeout: float | None) -> httpx.Response:
        timeout = httpx.Timeout(10, read=read_timeout)
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                return await client.post(f"{self.url}/{action}", json=payload,
                                         headers={SECRET_HEADER: self.secret})
        except httpx.HTTPError as exc:
            raise Overloaded(f"the edge that forwarded this request cannot be reached: "
                             f"{exc}", code="edge_unreachable", retry_after=1) from exc
