"""Reading a request body under a size limit, then handing it on as if unread."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope

from ..errors import InvalidRequest, RequestTimeout, RequestTooLarge
from ..http.formats import BASE
from ..http.requests import parse_object


class ClientGone(Exception):
    """The client disconnected before its body arrived."""


def too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge(f"the request body exceeds the limit of {limit} bytes")


async def read_body(scope: Scope, receive: Receive, limit: int,
                    idle_seconds: float | None = None) -> bytes:
    """The whole body; 413 as soon as it is known to exceed ``limit`` (from
    Content-Length, or while reading), never holding more than ``limit`` bytes; 408 when
    none of it arrives for ``idle_seconds`` (a client trickling or stalling its body)."""
    length = Headers(scope=scope).get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            async with asyncio.timeout(idle_seconds):
                message = await receive()
        except TimeoutError:
            raise RequestTimeout(f"the request body stopped arriving: nothing came for "
                                 f"{idle_seconds:g} s") from None
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that yields ``body`` once, then whatever the client sends (disconnect)."""
    sent = False

    async def receive_again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_again


def requested_model(path: str, body: bytes) -> str | None:
    """The model a request names: the body's ``model``, or the id in ``.../models/{id}``."""
    return model_named(path, parsed(body))


def parsed(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object; None when it is empty or not one (the node answers
    that in the API's own shape)."""
    if not body:
        return None
    try:
        return parse_object(body)
    except InvalidRequest:
        return None


def model_named(path: str, data: dict[str, Any] | None) -> str | None:
    """The model a request names, from its path or its parsed body."""
    for prefix in (BASE + "/models/", BASE + "/v1/models/"):
        if path.startswith(prefix) and len(path) > len(prefix):
            return path[len(prefix):]
    model = data.get("model") if data is not None else None
    return model if isinstance(model, str) else None
