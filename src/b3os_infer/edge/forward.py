"""The edge's inner app in fleet mode: each request goes to a node serving its model.

The body was read (under the limit) by ``EdgeMiddleware``; it is sent on whole, so a
node that refuses the connection can be replaced by the next one. The response streams
back chunk by chunk as the node writes it; a client that goes away closes the node's
response, which cancels the generation there.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qsl

import httpx
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from ..envelopes import error_response
from ..errors import InferError, Overloaded
from ..http.accounting import ACCOUNTING_KEY
from ..http.allowance import allowed_models
from ..http.formats import BASE
from ..observe.tracing import TRACE_HEADERS, outgoing_trace_headers
from ..pagination import page_by_id
from .accounting import EdgeAccounting
from .body import read_body, requested_model
from .callbacks import Tickets
from .fleet import ACCOUNTING_HEADER, CALLBACK_PREFIX, REQUEST_ID_HEADER, SECRET_HEADER
from .nodes import Node, NodePool

_NOT_FORWARDED = {"host", "content-length", "connection", "keep-alive", "authorization",
                  "x-api-key", "transfer-encoding", "te", "upgrade", "proxy-authorization",
                  SECRET_HEADER, REQUEST_ID_HEADER, ACCOUNTING_HEADER}
_NOT_RETURNED = {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server",
                 b"x-request-id", b"request-id"}


class Forwarder:
    def __init__(self, pool: NodePool, tickets: Tickets, secret: str,
                 advertise_url: str) -> None:
        self.pool = pool
        self.tickets = tickets
        self.secret = secret
        self.advertise_url = advertise_url.rstrip("/")
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        try:
            if scope["method"] == "GET" and path in (BASE + "/models", BASE + "/v1/models"):
                await listing(self.pool, scope)(scope, receive, send)
                return
            body = await read_body(scope, receive, 1 << 62)
            nodes = self.pool.candidates(requested_model(path, body))
            await self._forward(nodes, body, scope, receive, send)
        except InferError as error:
            rid = scope["state"]["request_id"]
            await error_response(path, error, rid)(scope, receive, send)

    async def _forward(self, nodes: list[Node], body: bytes, scope: Scope, receive: Receive,
                       send: Send) -> None:
        accounting: EdgeAccounting | None = scope["state"].get(ACCOUNTING_KEY)
        ticket = self.tickets.add(accounting) if accounting else None
        try:
            for node in nodes:
                request = self._request(node, body, scope, ticket)
                assert self.client is not None
                try:
                    response = await self.client.send(request, stream=True)
                except httpx.ConnectError as exc:
                    self.pool.mark_down(node, str(exc) or "connection refused")
                    continue
                await relay(response, receive, send)
                return
            raise Overloaded("every node serving this model refused the connection",
                             code="no_node_available", retry_after=2)
        finally:
            if accounting is not None and ticket is not None:
                await accounting.finish()
                self.tickets.remove(ticket)

    def _request(self, node: Node, body: bytes, scope: Scope,
                 ticket: str | None) -> httpx.Request:
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
                   if k.decode("latin-1").lower() not in _NOT_FORWARDED]
        if tracing := outgoing_trace_headers():   # the edge's span, in place of the caller's
            headers = [(k, v) for k, v in headers if k.lower() not in TRACE_HEADERS] + tracing
        headers.append((SECRET_HEADER, self.secret))
        headers.append((REQUEST_ID_HEADER, scope["state"]["request_id"]))
        if ticket is not None:
            headers.append((ACCOUNTING_HEADER,
                            f"{self.advertise_url}{CALLBACK_PREFIX}{ticket}"))
        query = scope.get("query_string", b"").decode("latin-1")
        url = node.url + scope["path"] + (f"?{query}" if query else "")
        assert self.client is not None
        return self.client.build_request(scope["method"], url, headers=headers, content=body,
                                         timeout=httpx.Timeout(10, read=None))


def _response_headers(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    headers = []
    for name, value in response.headers.raw:
        if name.lower() in _NOT_RETURNED:
            continue
        if name.lower() == b"server-timing":
            value = value.replace(b"total;", b"node;")
        headers.append((name, value))
    return headers


async def relay(response: httpx.Response, receive: Receive, send: Send) -> None:
    """Send the node's response on as it arrives; stop when the client goes away."""
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": _response_headers(response)})

    async def pump() -> None:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def client_gone() -> None:
        message: Message = await receive()
        while message["type"] != "http.disconnect":
            message = await receive()

    tasks = {asyncio.ensure_future(pump()), asyncio.ensure_future(client_gone())}
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await response.aclose()


def listing(pool: NodePool, scope: Scope) -> JSONResponse:
    """The union of the up nodes' listings, less the models the key may not use; the
    Anthropic one paginated as the node's own route paginates it."""
    key = allowed_models(scope)

    def visible(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in entries if key is None or key.allows_model(str(e.get("id")))]

    if scope["path"] == BASE + "/models":
        return JSONResponse({"object": "list", "data": visible(pool.openai_listing())})
    return JSONResponse(page_by_id(visible(pool.anthropic_listing()), query_params(scope)))


def query_params(scope: Scope) -> dict[str, str]:
    """The query string as Starlette reads it: blank values kept, the last repeat wins."""
    query = scope.get("query_string", b"").decode("latin-1")
    return dict(parse_qsl(query, keep_blank_values=True))
