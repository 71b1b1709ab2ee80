"""What an edge and its nodes say to each other: header names and the shared secret."""

from __future__ import annotations

import hmac
import logging
import os

import httpx

from ...errors import (
    InferError,
    InvalidRequest,
    Overloaded,
    PermissionDenied,
    RateLimited,
    RequestTooLarge,
)

SECRET_ENV = "B3OS_INFER_NODE_SECRET"
SECRET_HEADER = "x-b3os-node-secret"
REQUEST_ID_HEADER = "x-b3os-request-id"
ACCOUNTING_HEADER = "x-b3os-accounting"
# scopes the key lacks that a node checks itself (server_tools): a node behind an edge
# never sees the key, so the edge says what it may not do
DENIED_SCOPES_HEADER = "x-b3os-denied-scopes"
NODE_CHECKED_SCOPES = ("server_tools",)
CALLBACK_PREFIX = "/_b3os/accounting/"

log = logging.getLogger(__name__)

# Every call between an edge and a node is bounded. A node's response head may wait for
# the edge's queue (its admission long-poll), a stream has a keep-alive at least every
# 15 s: five minutes of silence mean the node is stuck.
FORWARD_TIMEOUT = httpx.Timeout(10, read=300)
ADMIT_TIMEOUT = httpx.Timeout(10, read=290)   # answered 529 before the edge gives up
SETTLE_TIMEOUT = httpx.Timeout(10)   # a settle, and a stored response's get, put, delete


class MissingSecret(RuntimeError):
    pass


def node_secret() -> str:
    secret = os.environ.get(SECRET_ENV, "").strip()
    if len(secret) < 16:
        raise MissingSecret(f"set {SECRET_ENV} to the same secret (16 characters or more) for "
                            "the edge and its nodes, e.g. `export "
                            f"{SECRET_ENV}=$(openssl rand -hex 32)`")
    return secret


def secret_matches(presented: str | None, secret: str) -> bool:
    return hmac.compare_digest((presented or "").encode(), secret.encode())


def error_to_wire(error: InferError) -> dict[str, object]:
    return {"status": error.status, "code": error.code, "message": error.message,
            "param": error.param, "retry_after": error.retry_after,
            "retryable": error.retryable}


_CLASSES: dict[int, type[InferError]] = {
    400: InvalidRequest, 403: PermissionDenied, 413: RequestTooLarge, 429: RateLimited,
    529: Overloaded}


def error_from_wire(data: dict[str, object]) -> InferError:
    status = int(str(data.get("status", 500)))
    kind = _CLASSES.get(status, InferError)
    retry_after = data.get("retry_after")
    error = kind(str(data.get("message", "the edge refused this request")),
                 code=str(data["code"]) if data.get("code") else None,
                 param=str(data["param"]) if data.get("param") else None,
                 retry_after=float(str(retry_after)) if retry_after is not None else None)
    error.status = status
    error.retryable = bool(data.get("retryable", error.retryable))
    return error


async def call_edge(client: httpx.AsyncClient, url: str, secret: str,
                    payload: dict[str, object], timeout: httpx.Timeout) -> httpx.Response:
    """A node's POST to the edge that forwarded its request (``url``: a callback action),
    on the node's one client, bounded by ``timeout``; an edge that does not answer is
    ``Overloaded`` (``edge_timeout`` or ``edge_unreachable``, retry after a second)."""
    try:
        return await client.post(url, json=payload, headers={SECRET_HEADER: secret},
                                 timeout=timeout)
    except httpx.TimeoutException as exc:
        raise Overloaded("the edge that forwarded this request did not answer in time",
                         code="edge_timeout", retry_after=1) from exc
    except httpx.HTTPError as exc:
        log.warning("the edge at %s cannot be reached: %s", url, exc)
        raise Overloaded("the edge that forwarded this request cannot be reached",
                         code="edge_unreachable", retry_after=1) from exc
