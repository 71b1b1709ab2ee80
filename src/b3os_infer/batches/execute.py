"""One batch request, run through the node's own route in process.

The request goes to the same route an interactive client calls (``POST /v1/messages``,
``/chat/completions``, ...), without the edge in front of it: the route validates it,
renders its prompt, runs it on the engine (sharing its prefix cache) and answers with the
body, success or error, that the interactive route would send. ``BatchAccounting`` stands
in for the edge's accounting, and the request's row goes to the usage ledger under the
batch class (its route is written ``batch POST /v1/messages``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from sqlalchemy.exc import OperationalError
from starlette.types import ASGIApp, Message, Scope

from .. import ids
from ..edge.access.keys import KeyRecord, KeyStore
from ..edge.state import EdgeState
from ..edge.storage.usage import UsageRow
from ..engine.priority import background
from ..envelopes import error_response
from ..errors import AuthenticationFailed, InferError, InternalError
from ..http.accounting import ACCOUNTING_KEY
from ..http.allowance import ALLOWANCE_KEY
from ..http.formats import BASE
from .async_store import batches_unavailable
from .budget import BatchAccounting
from .store import Answer, BatchRow, ItemRow

log = logging.getLogger(__name__)
_KEY_CACHE_SECONDS = 2.0


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes


class Executor:
    def __init__(self, edge: EdgeState, keys: KeyStore) -> None:
        self.edge = edge
        self.keys = keys
        self.app: ASGIApp | None = None
        self._keys: dict[str, tuple[float, KeyRecord | None]] = {}

    def bind(self, app: ASGIApp) -> None:
        """The node's routes, without the edge: where batch requests are sent."""
        self.app = app

    async def run(self, batch: BatchRow, item: ItemRow) -> Answer:
        rid = ids.request_id()
        path = BASE + batch.endpoint
        began = time.perf_counter()
        key = await self._key(batch.key_id)
        accounting: BatchAccounting | None = None
        if key is None or key.expired():
            reply = _refusal(path, AuthenticationFailed(
                "the key that created this batch is revoked or expired"), rid)
        else:
            accounting = BatchAccounting(self.edge, key)
            reply = await self._call(path, item.body.encode(), rid, key, accounting)
        usage = accounting.usage if accounting else None
        await self._record(batch, item, rid, reply.status, accounting, began)
        return Answer(state="succeeded" if reply.status == 200 else "errored",
                      status_code=reply.status, request_id=rid,
                      answer=reply.body.decode("utf-8", "replace"),
                      input_tokens=usage.input_tokens if usage else 0,
                      output_tokens=usage.output_tokens if usage else 0,
                      cached_tokens=usage.cached_tokens if usage else 0)

    async def _key(self, key_id: str) -> KeyRecord | None:
        """The batch's key, unless revoked; read again every few seconds, on a database
        thread (one that does not answer: ``batches_unavailable``, the request waits)."""
        now = time.monotonic()
        cached = self._keys.get(key_id)
        if cached is None or now - cached[0] > _KEY_CACHE_SECONDS:
            try:
                records = await self.edge.ledger.threads.run(self.keys.list)
            except (TimeoutError, OperationalError) as exc:
                raise batches_unavailable() from exc
            record = next((r for r in records if r.id == key_id), None)
            if record is not None and record.revoked_at is not None:
                record = None
            cached = self._keys[key_id] = (now, record)
        return cached[1]

    async def _call(self, path: str, body: bytes, rid: str, key: KeyRecord,
                    accounting: BatchAccounting) -> Reply:
        assert self.app is not None, "the executor is bound to the node's app"
        scope = _scope(path, body, rid)
        scope["state"].update({ACCOUNTING_KEY: accounting, ALLOWANCE_KEY: key, "api_key": key})
        status, chunks = 500, []
        delivered = False
        forever = asyncio.Event()

        async def receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await forever.wait()   # a batch never disconnects; a cancel ends the work
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            with background():   # it yields to interactive requests in the engine
                await self.app(scope, receive, send)
        except Exception:  # noqa: BLE001 - logged; the request errs, the batch goes on
            log.exception("batch request %s failed", rid)
            return _refusal(path, InternalError("the server failed while running this "
                                                "request; it has been logged"), rid)
        return Reply(status, b"".join(chunks))

    async def _record(self, batch: BatchRow, item: ItemRow, rid: str, status: int,
                      accounting: BatchAccounting | None, began: float) -> None:
        usage = accounting.usage if accounting else None
        row = UsageRow(
            request_id=rid, key_id=batch.key_id, model=item.model,
            route=f"batch POST {batch.endpoint}", status=status,
            input_tokens=usage.input_tokens if usage else
            (accounting.input_tokens if accounting else 0),
            output_tokens=usage.output_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            latency_ms=round((time.perf_counter() - began) * 1000, 3))
        try:
            await self.edge.ledger.commit(row)
        except Exception:  # noqa: BLE001 - a ledger outage must not stop the batch
            log.exception("could not write the usage row of %s", rid)


def _scope(path: str, body: bytes, rid: str) -> Scope:
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
        "client": None, "server": None, "state": {"request_id": rid},
    }


def _refusal(path: str, error: InferError, rid: str) -> Reply:
    response = error_response(path, error, rid)
    return Reply(response.status_code, bytes(response.body))
