"""Authentication and scopes for /v1/infer (pure ASGI)."""

from __future__ import annotations

import logging
import time

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ...envelopes import error_response
from ...errors import AuthenticationFailed, InferError, PermissionDenied
from ...http.allowance import grant
from ...http.formats import BASE
from ..storage.usage import UsageLedger, UsageRow
from .key_gate import KeyGate
from .keys import KeyRecord

log = logging.getLogger(__name__)


def presented_key(headers: Headers) -> str | None:
    """The key from ``x-api-key`` or ``Authorization: Bearer``; either works."""
    if api_key := headers.get("x-api-key"):
        return api_key.strip()
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def required_scope(path: str) -> str:
    tail = path[len(BASE):]
    if tail == "/admin" or tail.startswith("/admin/"):
        return "admin"
    if tail.startswith("/models") or tail.startswith("/v1/models"):
        return "models:read"
    return "infer"


class AuthMiddleware:
    """Refusals are answered in the route's shape and, with a ledger, written to it."""

    def __init__(self, app: ASGIApp, gate: KeyGate, ledger: UsageLedger | None = None) -> None:
        self.app = app
        self.gate = gate
        self.ledger = ledger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == BASE or path.startswith(BASE + "/")):
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        record, error = await self._authenticate(Headers(scope=scope), path)
        if error is not None:
            rid = scope.get("state", {}).get("request_id")
            response = error_response(path, error, rid)
            await response(scope, receive, send)
            await self._record_refusal(scope, record, response.status_code, began)
            return
        assert record is not None   # no error: a key was verified
        scope.setdefault("state", {})["api_key"] = record
        grant(scope, record)
        await self.app(scope, receive, send)

    async def _authenticate(self, headers: Headers, path: str
                            ) -> tuple[KeyRecord | None, InferError | None]:
        key = presented_key(headers)
        if key is None:
            return None, AuthenticationFailed("missing API key: send it as `Authorization: "
                                              "Bearer <key>` or as `x-api-key: <key>`",
                                              code="missing_api_key")
        try:
            record = await self.gate.verify(key)
        except InferError as error:   # the key database did not answer
            return None, error
        if record is None:
            return None, AuthenticationFailed("invalid API key: it is unknown or has been "
                                              "revoked")
        if record.expired():
            return record, AuthenticationFailed(f"this API key expired at {record.expires_at}",
                                                code="expired_api_key")
        scope_name = required_scope(path)
        if not record.allows(scope_name):
            return record, PermissionDenied(f"this key lacks the {scope_name!r} scope",
                                            code="missing_scope")
        return record, None

    async def _record_refusal(self, scope: Scope, record: KeyRecord | None, status: int,
                              began: float) -> None:
        """The row of a refused request, with the status sent (529 is 503 on OpenAI's)."""
        if self.ledger is None:
            return
        path = scope["path"]
        row = UsageRow(request_id=scope.get("state", {}).get("request_id") or "",
                       key_id=record.id if record else None, model="",
                       route=f"{scope.get('method', '')} {path[len(BASE):] or '/'}",
                       status=status, input_tokens=0, output_tokens=0, cached_tokens=0,
                       latency_ms=round((time.perf_counter() - began) * 1000, 3))
        try:
            await self.ledger.commit(row)
        except Exception:  # noqa: BLE001 - a ledger outage must not fail the answer
            log.exception("could not write the usage row of %s", row.request_id)
