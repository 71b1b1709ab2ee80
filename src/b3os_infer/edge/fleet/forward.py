"""The edge's inner app in fleet mode: each request goes to a node serving its model.

The body was read (under the limit) by ``EdgeMiddleware``; it is sent on whole, so a
node that fails before its first byte (refused, timed out, reset, garbled) is marked down
and replaced by the next one. The response streams back chunk by chunk as the node
writes it; a client that goes away, while the node still admits the request or while it
streams, closes the node's connection, which cancels the generation there.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

import httpx
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from ...envelopes import error_response
from ...errors import ClientDisconnected, InferError, Overloaded
from ...http.accounting import ACCOUNTING_KEY
from ...http.allowance import allowed_models
from ...http.cancellation import race_disconnect
from ...http.endpoint import report
from ...http.formats import BASE
from ...observe.metrics import Metrics
from ...observe.tracing import TRACE_HEADERS, outgoing_trace_headers
from ...pagination import page_by_id
from ..access.keys import KeyRecord
from ..admission.metering import EdgeAccounting
from ..body import model_named, parsed, read_body
from ..shutdown_gate import DRAINING_HEADER
from .affinity import routing_key
from .callbacks import Tickets
from .cut_stream import WholeFrames, cut_event
from .node_choice import Balance, Placement, place
from .nodes import Node, NodePool
from .protocol import (
    ACCOUNTING_HEADER,
    CALLBACK_PREFIX,
    DENIED_SCOPES_HEADER,
    FORWARD_TIMEOUT,
    NODE_CHECKED_SCOPES,
    REQUEST_ID_HEADER,
    SECRET_HEADER,
)

log = logging.getLogger(__name__)

_NOT_FORWARDED = {"host", "content-length", "connection", "keep-alive", "authorization",
                  "x-api-key", "transfer-encoding", "te", "upgrade", "proxy-authorization",
                  SECRET_HEADER, REQUEST_ID_HEADER, ACCOUNTING_HEADER, DENIED_SCOPES_HEADER}
_NOT_RETURNED = {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server",
                 b"x-request-id", b"request-id"}


class Forwarder:
    def __init__(self, pool: NodePool, tickets: Tickets, secret: str,
                 advertise_url: str, metrics: Metrics | None = None,
                 balance: Balance | None = None) -> None:
        self.pool = pool
        self.tickets = tickets
        self.secret = secret
        self.advertise_url = advertise_url.rstrip("/")
        self.metrics = metrics
        self.balance = balance or Balance()
        self.client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        try:
            if scope["method"] == "GET" and path in (BASE + "/models", BASE + "/v1/models"):
                await listing(self.pool, scope)(scope, receive, send)
                return
            body = await read_body(scope, receive, 1 << 62)
            data = parsed(body)
            model = model_named(path, data)
            placement = self._place(model, data, scope)
            # from here to the response's last byte, a client that goes away ends it
            await race_disconnect(receive, self._forward(placement.nodes, model, body, scope,
                                                         send))
        except ClientDisconnected:
            return
        except InferError as error:
            rid = scope["state"]["request_id"]
            await error_response(path, report(error, rid), rid)(scope, receive, send)

    def _place(self, model: str | None, data: dict[str, Any] | None,
               scope: Scope) -> Placement:
        """The nodes to try, the session's own first (``node_choice.py``), and the decision
        counted in ``/metrics``."""
        key = routing_key(Headers(scope=scope), data)
        nodes = self.pool.serving(model)
        placement = place(key, nodes, lambda node: node.load(model), self.balance,
                          self.pool.next_turn())
        if self.metrics is not None:
            self.metrics.routed(model, placement.decision, key.source if key else "none")
        return placement

    async def _forward(self, nodes: list[Node], model: str | None, body: bytes, scope: Scope,
                       send: Send) -> None:
        accounting: EdgeAccounting | None = scope["state"].get(ACCOUNTING_KEY)
        ticket: str | None = None
        try:
            for node in nodes:
                ticket = self._new_ticket(accounting, ticket)
                node.started(model)
                try:
                    response = await self._send(node, body, scope, ticket)
                    if response is not None:
                        await relay(response, send, self.pool, node, scope)
                        return
                finally:
                    node.finished(model)
            raise Overloaded("every node serving this model failed before answering",
                             code="no_node_available", retry_after=2)
        finally:
            if accounting is not None and ticket is not None:
                await accounting.finish()
                self.tickets.remove(ticket)

    def _new_ticket(self, accounting: EdgeAccounting | None, old: str | None) -> str | None:
        """A fresh ticket per try: a node that failed cannot admit or settle the retry."""
        if accounting is None:
            return None
        if old is not None:
            self.tickets.remove(old)
        return self.tickets.add(accounting)

    async def _send(self, node: Node, body: bytes, scope: Scope,
                    ticket: str | None) -> httpx.Response | None:
        """The node's response head, or None after a transport failure (node marked down,
        what it had admitted given back) so that the next node is tried."""
        request = self._request(node, body, scope, ticket)
        assert self.client is not None
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.PoolTimeout):   # our own pool, not the node
                raise Overloaded("the edge has no free connection to its nodes right now",
                                 code="edge_busy", retry_after=1) from exc
            await self._give_up(node, scope, describe(exc))
            return None
        if response.headers.get(DRAINING_HEADER):     # the node is shutting down
            await response.aclose()
            await self._give_up(node, scope, "shutting down")
            return None
        return response

    async def _give_up(self, node: Node, scope: Scope, reason: str) -> None:
        self.pool.mark_down(node, reason)
        accounting: EdgeAccounting | None = scope["state"].get(ACCOUNTING_KEY)
        if accounting is not None:
            await accounting.reset()

    def _request(self, node: Node, body: bytes, scope: Scope,
                 ticket: str | None) -> httpx.Request:
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
                   if k.decode("latin-1").lower() not in _NOT_FORWARDED]
        if tracing := outgoing_trace_headers():   # the edge's span, in place of the caller's
            headers = [(k, v) for k, v in headers if k.lower() not in TRACE_HEADERS] + tracing
        headers.append((SECRET_HEADER, self.secret))
        headers.append((REQUEST_ID_HEADER, scope["state"]["request_id"]))
        if denied := denied_scopes(scope):
            headers.append((DENIED_SCOPES_HEADER, " ".join(denied)))
        if ticket is not None:
            headers.append((ACCOUNTING_HEADER,
                            f"{self.advertise_url}{CALLBACK_PREFIX}{ticket}"))
        query = scope.get("query_string", b"").decode("latin-1")
        url = node.url + scope["path"] + (f"?{query}" if query else "")
        assert self.client is not None
        return self.client.build_request(scope["method"], url, headers=headers, content=body,
                                         timeout=FORWARD_TIMEOUT)


def denied_scopes(scope: Scope) -> list[str]:
    """The scopes the node checks itself that the request's key lacks."""
    record: KeyRecord | None = scope.get("state", {}).get("api_key")
    if record is None:
        return []
    return [name for name in NODE_CHECKED_SCOPES if not record.allows(name)]


def describe(exc: httpx.TransportError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _response_headers(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    headers = []
    for name, value in response.headers.raw:
        if name.lower() in _NOT_RETURNED:
            continue
        if name.lower() == b"server-timing":
            value = value.replace(b"total;", b"node;")
        headers.append((name, value))
    return headers


async def relay(response: httpx.Response, send: Send, pool: NodePool, node: Node,
                scope: Scope) -> None:
    """Send the node's response on as it arrives (the caller races it against the client's
    disconnect, which closes the node's response and so cancels the work there); a stream
    goes on in whole frames, and ends with the API's error event if the node breaks off."""
    frames = WholeFrames() if _is_stream(response) else None
    try:
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": _response_headers(response)})
        try:
            async for chunk in response.aiter_raw():
                body = frames.feed(chunk) if frames else chunk
                await send({"type": "http.response.body", "body": body, "more_body": True})
        except httpx.TransportError as exc:   # after the first byte: no other node can
            await _broken_off(exc, send, pool, node, scope, frames)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await response.aclose()


def _is_stream(response: httpx.Response) -> bool:
    return response.status_code == 200 and \
        response.headers.get("content-type", "").startswith("text/event-stream")


async def _broken_off(exc: httpx.TransportError, send: Send, pool: NodePool, node: Node,
                      scope: Scope, frames: WholeFrames | None) -> None:
    rid = scope["state"]["request_id"]
    log.warning("request %s: node %s broke off its response: %s", rid, node.url,
                describe(exc))
    if isinstance(exc, httpx.TimeoutException):
        pool.mark_down(node, describe(exc))
    if frames is not None:
        await send({"type": "http.response.body", "more_body": True,
                    "body": cut_event(scope["path"], rid, frames)})


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
