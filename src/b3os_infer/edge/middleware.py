"""The edge's per-request work after authentication (pure ASGI).

Reads the body under the size limit, refuses models the key may not use, puts an
``EdgeAccounting`` and the key's stored responses where the routes find them, adds the
rate-limit headers to the response start, and writes the request's row to the usage
ledger when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..envelopes import error_response
from ..errors import InferError
from ..http.accounting import ACCOUNTING_KEY
from ..http.formats import BASE, api_for_path
from ..http.stored_responses import STORE_KEY
from ..observe.context import note_model
from .access.keys import KeyRecord
from .admission.metering import EdgeAccounting, model_not_allowed
from .admission.ratelimit_headers import ratelimit_headers
from .body import ClientGone, read_body, replay, requested_model
from .state import EdgeState
from .storage.response_store import KeyResponses
from .storage.usage import UsageRow

log = logging.getLogger(__name__)

CLIENT_CLOSED = 499   # the ledger's status of a request whose client went away


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, edge: EdgeState) -> None:
        self.app = app
        self.edge = edge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state", {})
        key: KeyRecord | None = state.get("api_key")
        if scope["type"] != "http" or key is None or not scope["path"].startswith(BASE):
            await self.app(scope, receive, send)
            return
        request = EdgeRequest(self.edge, scope, key)
        try:
            body = await read_body(scope, receive, self.edge.max_body_bytes,
                                   self.edge.body_timeout_seconds)
        except ClientGone:
            await request.abandoned()
            return
        except InferError as error:
            await request.refuse(error, receive, send)
            return
        request.model = requested_model(scope["path"], body)
        note_model(request.model)
        if request.model is not None and not key.allows_model(request.model):
            await request.refuse(model_not_allowed(request.model), receive, send)
            return
        await request.run(self.app, replay(body, receive), send)


class EdgeRequest:
    def __init__(self, edge: EdgeState, scope: Scope, key: KeyRecord) -> None:
        self.edge = edge
        self.scope = scope
        self.key = key
        self.model: str | None = None
        self.status = 0
        self.began = time.perf_counter()
        self.recorded = False
        self.accounting = EdgeAccounting(edge, key)

    async def abandoned(self) -> None:
        """The client went away before its body arrived: its row says 499."""
        self.status = CLIENT_CLOSED
        await self._end()

    async def refuse(self, error: InferError, receive: Receive, send: Send) -> None:
        response = error_response(self.scope["path"], error, self.scope["state"]["request_id"])
        try:
            await response(self.scope, receive, self._sending(send))
        finally:
            await self._end()

    async def run(self, app: ASGIApp, receive: Receive, send: Send) -> None:
        self.scope["state"][ACCOUNTING_KEY] = self.accounting
        self.scope["state"][STORE_KEY] = KeyResponses(self.edge.responses, self.key.id)
        try:
            await app(self.scope, receive, self._sending(send))
            if not self.recorded:   # the response never ended: its client went away
                self.status = CLIENT_CLOSED
        finally:
            await self._end()

    def _sending(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
                await self._add_ratelimit_headers(message)
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # The row is committed before the client sees the response end, so a
                # process killed after a request completed has its row.
                await self._end()
            await send(message)

        return sending

    async def _end(self) -> None:
        """Settle and write the row, once. A client that closes its connection as soon as it
        has the whole body (an SDK client used for one call) cancels the request while the
        edge still waits for the node's settle: the end goes on all the same, shielded."""
        if self.recorded:
            return
        self.recorded = True
        ending = asyncio.ensure_future(self._finish())
        self.edge.finishing.add(ending)
        ending.add_done_callback(self.edge.finishing.discard)
        await asyncio.shield(ending)

    async def _finish(self) -> None:
        await self.accounting.finish()
        await self._record()

    async def _add_ratelimit_headers(self, message: Message) -> None:
        snap = self.accounting.snapshot
        model = self.accounting.model or self.model
        if snap is None and model is not None:
            try:
                snap = await self.edge.limiter.peek(self.key.id, model,
                                                    self.edge.limits.for_model(model))
            except InferError:
                return
        if snap is not None:  # new names only, so appended without a search
            added = ratelimit_headers(api_for_path(self.scope["path"]), snap)
            message["headers"] = [*message.get("headers", ()),
                                  *((name.encode("latin-1"), value.encode("latin-1"))
                                    for name, value in added.items())]

    async def _record(self) -> None:
        usage = self.accounting.usage
        row = UsageRow(
            request_id=self.scope["state"]["request_id"], key_id=self.key.id,
            model=self.accounting.model or self.model or "", route=self._route(),
            status=self.status or CLIENT_CLOSED,
            input_tokens=usage.input_tokens if usage else self.accounting.input_tokens,
            output_tokens=usage.output_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            latency_ms=round((time.perf_counter() - self.began) * 1000, 3))
        try:
            await self.edge.ledger.commit(row)
        except Exception:  # noqa: BLE001 - a ledger outage must not fail the request
            log.exception("could not write the usage row of %s", row.request_id)

    def _route(self) -> str:
        return f"{self.scope.get('method', '')} {self.scope['path'][len(BASE):] or '/'}"
