"""The admin API under ``/v1/infer/admin``: keys and usage, for the console and scripts.

``AdminApi`` sits inside authentication (which demands the ``admin`` scope for these paths,
``edge/access/auth.py``) and outside the per-request edge work, so admin calls take no rate
limit and write no usage row. Errors have the OpenAI envelope, as every route outside
``/v1/infer/v1``.

- ``GET    /admin/keys``: every key, never a secret;
- ``POST   /admin/keys``: a new key (``KeyCreate``); the answer holds its secret, once;
- ``DELETE /admin/keys/{id}``: revoke it (the answer is the revoked key);
- ``GET    /admin/usage?bucket=hour&since=...``: the ledger summed per bucket, key, model;
- ``/admin/models...``: the models' residency, loading and unloading (``residency.py``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ...envelopes import error_response
from ...errors import InferError, InvalidRequest, MethodNotAllowed, NotFound
from ...http.endpoint import endpoint
from ...http.formats import BASE
from ...http.requests import json_body, request_id
from ...node.registry import ModelRegistry
from ...wire_models import SentModel, decode
from ..build import expiry
from ..state import EdgeState
from ..storage.usage import BUCKETS
from .residency import model_routes
from .wire import (
    Bucket,
    CreatedKey,
    KeyCreate,
    KeyList,
    KeyObject,
    UsagePoint,
    UsageSeries,
)

ADMIN = BASE + "/admin"
# how far back the usage series reaches when ``since`` is not given, per bucket
_DEFAULT_SPAN = {"minute": timedelta(hours=1), "hour": timedelta(days=1),
                 "day": timedelta(days=30)}


def is_admin_path(path: str) -> bool:
    return path == ADMIN or path.startswith(ADMIN + "/")


def _json(model: SentModel, status: int = 200) -> Response:
    return Response(model.to_json(), status_code=status, media_type="application/json")


def _edge(request: Request) -> EdgeState:
    edge: EdgeState = request.app.state.edge
    return edge


@endpoint
async def list_keys(request: Request) -> Response:
    records = await asyncio.to_thread(_edge(request).keys.list)
    return _json(KeyList(data=[KeyObject.of(r) for r in records]))


@endpoint
async def create_key(request: Request) -> Response:
    body = decode(KeyCreate, await json_body(request))
    try:
        expires = expiry(body.expires) if body.expires else None
    except ValueError:
        raise InvalidRequest(f"expires: {body.expires!r} is neither a duration (30d, 12h, "
                             "90m, 2w) nor a date (2027-01-31)", param="expires") from None
    record, secret = await asyncio.to_thread(
        _edge(request).keys.create, body.name, tuple(body.scopes),
        models=tuple(body.models) if body.models else None, expires_at=expires)
    return _json(CreatedKey(**KeyObject.of(record).model_dump(), secret=secret), 201)


@endpoint
async def revoke_key(request: Request) -> Response:
    key_id = request.path_params["key_id"]
    try:
        record = await asyncio.to_thread(_edge(request).keys.revoke, key_id)
    except KeyError:
        raise NotFound(f"no key with id {key_id!r}; GET {ADMIN}/keys lists them",
                       code="key_not_found", param="key_id") from None
    return _json(KeyObject.of(record))


@endpoint
async def usage_series(request: Request) -> Response:
    bucket = request.query_params.get("bucket", "hour")
    if bucket not in BUCKETS:
        raise InvalidRequest(f"bucket: {bucket!r} is not one of {', '.join(BUCKETS)}",
                             param="bucket")
    since = _since(request.query_params.get("since"), bucket)
    edge = _edge(request)
    points = await asyncio.to_thread(edge.ledger.series, bucket, since)
    names = {r.id: r.name for r in await asyncio.to_thread(edge.keys.list)}
    keys = {p.key_id: names.get(p.key_id, "") for p in points if p.key_id}
    return _json(UsageSeries(bucket=cast(Bucket, bucket), since=since, keys=keys,
                             data=[UsagePoint(**vars(p)) for p in points]))


def _since(text: str | None, bucket: str) -> str:
    if text is None:
        at = datetime.now(UTC) - _DEFAULT_SPAN[bucket]
    else:
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidRequest(f"since: {text!r} is not an ISO date or time "
                                 "(2026-12-01T12:00:00Z)", param="since") from None
        at = at.replace(tzinfo=at.tzinfo or UTC).astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    path = request.url.path
    error: InferError = MethodNotAllowed(f"{request.method} is not allowed on {path}") \
        if exc.status_code == 405 else NotFound(f"{request.method} {path} is not a route of "
                                                "the admin API", code="route_not_found")
    return error_response(path, error, request_id(request))


async def _infer_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, InferError)
    return error_response(request.url.path, exc, request_id(request))


def admin_routes() -> list[Route]:
    return [
        Route(ADMIN + "/keys", list_keys, methods=["GET"]),
        Route(ADMIN + "/keys", create_key, methods=["POST"]),
        Route(ADMIN + "/keys/{key_id}", revoke_key, methods=["DELETE"]),
        Route(ADMIN + "/usage", usage_series, methods=["GET"]),
        *model_routes(ADMIN),
    ]


class AdminApi:
    """Answers the admin paths itself; every other request goes on to ``app``."""

    def __init__(self, app: ASGIApp, edge: EdgeState,
                 registry: ModelRegistry | None = None) -> None:
        self.app = app
        self.routes = Starlette(routes=admin_routes(), exception_handlers={
            HTTPException: _http_error, InferError: _infer_error})
        self.routes.state.edge = edge
        self.routes.state.registry = registry   # None on a fleet's edge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_admin_path(scope.get("path", "")):
            await self.routes(scope, receive, send)
        else:
            await self.app(scope, receive, send)
