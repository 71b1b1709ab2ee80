"""``GET /metrics``: the Prometheus scrape, and who may read it.

Outside the public API path (``/v1/infer``). A scraper shows one of: a key with the
``metrics:read`` scope (``admin`` has every scope), as ``Authorization: Bearer`` or
``x-api-key``; the metrics token of ``[metrics] token`` or ``B3OS_INFER_METRICS_TOKEN``
as a bearer token (the only way into a node, which has no keys, besides the node secret
its edges hold). Refusals have the OpenAI error shape, like every path outside
``/v1/infer/v1``.
"""

from __future__ import annotations

import os

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..envelopes import error_response
from ..errors import AuthenticationFailed, InferError, PermissionDenied
from ..http.requests import request_id
from ..observe.metrics import CONTENT_TYPE, Metrics
from .access.auth import presented_key
from .access.key_gate import KeyGate
from .fleet.protocol import SECRET_HEADER, secret_matches

METRICS_PATH = "/metrics"
TOKEN_ENV = "B3OS_INFER_METRICS_TOKEN"
SCOPE = "metrics:read"


class ScrapeAccess:
    def __init__(self, keys: KeyGate | None, token: str | None = None,
                 node_secret: str | None = None) -> None:
        self.keys = keys
        self.token = token or os.environ.get(TOKEN_ENV) or None
        self.node_secret = node_secret

    async def refusal(self, headers: Headers) -> InferError | None:
        """None when the request may scrape; else why not."""
        if self.node_secret and secret_matches(headers.get(SECRET_HEADER), self.node_secret):
            return None
        presented = presented_key(headers)
        if presented is None:
            return AuthenticationFailed(f"missing credential: send a key with the {SCOPE!r} "
                                        "scope, or the metrics token, as `Authorization: "
                                        "Bearer <key>`", code="missing_api_key")
        if self.token and secret_matches(presented, self.token):
            return None
        record = await self.keys.verify(presented) if self.keys is not None else None
        if record is None or record.expired():
            return AuthenticationFailed("invalid credential: not the metrics token nor a "
                                        "valid key")
        if not record.allows(SCOPE):
            return PermissionDenied(f"this key lacks the {SCOPE!r} scope",
                                    code="missing_scope")
        return None


def metrics_route(metrics: Metrics, access: ScrapeAccess) -> Route:
    async def scrape(request: Request) -> Response:
        try:
            error = await access.refusal(request.headers)
        except InferError as unavailable:   # the key database cannot be read
            error = unavailable
        if error is not None:
            return error_response(METRICS_PATH, error, request_id(request))
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    return Route(METRICS_PATH, scrape, methods=["GET"])
