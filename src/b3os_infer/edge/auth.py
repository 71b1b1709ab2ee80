"""Authentication and scopes for /v1/infer (pure ASGI)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import AuthenticationFailed, InferError, PermissionDenied
from ..http.formats import BASE, error_response
from .keys import KeyRecord, KeyStore


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
    if tail.startswith("/models") or tail.startswith("/v1/models"):
        return "models:read"
    return "infer"


class AuthMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyStore) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == BASE or path.startswith(BASE + "/")):
            await self.app(scope, receive, send)
            return
        try:
            record = self._authenticate(Headers(scope=scope), path)
        except InferError as error:
            rid = scope.get("state", {}).get("request_id")
            await error_response(path, error, rid)(scope, receive, send)
            return
        scope.setdefault("state", {})["api_key"] = record
        await self.app(scope, receive, send)

    def _authenticate(self, headers: Headers, path: str) -> KeyRecord:
        key = presented_key(headers)
        if key is None:
            raise AuthenticationFailed("missing API key: send it as `Authorization: Bearer "
                                       "<key>` or as `x-api-key: <key>`", code="missing_api_key")
        record = self.keys.verify(key)
        if record is None:
            raise AuthenticationFailed("invalid API key: it is unknown or has been revoked")
        if record.expired():
            raise AuthenticationFailed(f"this API key expired at {record.expires_at}",
                                       code="expired_api_key")
        scope_name = required_scope(path)
        if not record.allows(scope_name):
            raise PermissionDenied(f"this key lacks the {scope_name!r} scope",
                                   code="missing_scope")
        return record
