"""The node's front door (pure ASGI): only requests forwarded by an edge get in
(and scrapes of ``/metrics``, which checks its own credential).

A forwarded request carries the shared secret, the edge's request id, and the URL where
the edge admits and settles it; the routes reach that URL through ``RemoteAccounting``
(and the key's stored responses through ``RemoteResponses``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import httpx
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ... import ids
from ...core import Usage
from ...envelopes import error_response
from ...errors import AuthenticationFailed, Overloaded
from ...http.accounting import ACCOUNTING_KEY
from ...http.allowance import grant
from ...http.stored_responses import STORE_KEY
from ..scrape import METRICS_PATH
from ..storage.response_store import RemoteResponses
from .protocol import (
    ACCOUNTING_HEADER,
    ADMIT_TIMEOUT,
    DENIED_SCOPES_HEADER,
    REQUEST_ID_HEADER,
    SECRET_HEADER,
    SETTLE_TIMEOUT,
    call_edge,
    error_from_wire,
    secret_matches,
)

log = logging.getLogger(__name__)


class NodeGuard:
    def __init__(self, app: ASGIApp, secret: str) -> None:
        self.app = app
        self.secret = secret
        # one client for every call back to the edge (admit, settle, stored responses),
        # closed when the app shuts down
        self.client = httpx.AsyncClient(limits=httpx.Limits(max_connections=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._closing(send))
            return
        if scope["type"] != "http" or scope["path"] == METRICS_PATH:   # it checks itself
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
            state[ACCOUNTING_KEY] = RemoteAccounting(url, self.secret, self.client)
            state[STORE_KEY] = RemoteResponses(url, self.secret, self.client)
        if denied := headers.get(DENIED_SCOPES_HEADER):
            grant(scope, EdgeSaid(frozenset(denied.split())))
        await self.app(scope, receive, send)

    def _closing(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                await self.client.aclose()
            await send(message)
        return sending


class EdgeSaid:
    """What the forwarding edge said the request's key may not do: the scopes the node
    checks itself. Models are the edge's to check; every one is allowed here."""

    def __init__(self, denied: frozenset[str]) -> None:
        self.denied = denied

    def allows_model(self, model_id: str) -> bool:
        return True

    def allows(self, scope: str) -> bool:
        return scope not in self.denied


class RemoteAccounting:
    """Admits and settles at the edge that forwarded the request, each call bounded.

    The admission is a long-poll (the edge answers when its queue has a place); a node
    whose own client goes away cancels it, which closes the connection, and the edge
    then gives up the place (``callbacks.py``)."""

    def __init__(self, url: str, secret: str, client: httpx.AsyncClient) -> None:
        self.url = url
        self.secret = secret
        self.client = client

    async def admit(self, model_id: str, input_tokens: int, max_tokens: int) -> None:
        response = await self._post("admit", {"model": model_id, "input_tokens": input_tokens,
                                              "max_tokens": max_tokens}, ADMIT_TIMEOUT)
        if response.status_code != 200:
            raise error_from_wire(response.json())

    async def settle(self, model_id: str, usage: Usage | None) -> None:
        try:
            await self._post("settle", {"model": model_id,
                                        "usage": asdict(usage) if usage else None},
                             SETTLE_TIMEOUT)
        except Overloaded:
            log.warning("could not settle at %s; the edge settles it itself", self.url)

    async def _post(self, action: str, payload: dict[str, object],
                    timeout: httpx.Timeout) -> httpx.Response:
        return await call_edge(self.client, f"{self.url}/{action}", self.secret, payload,
                               timeout)
