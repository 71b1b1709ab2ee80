"""Reading JSON bodies and racing work against a client's disconnect."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from starlette.requests import Request

from ..errors import ClientDisconnected, InvalidRequest

T = TypeVar("T")


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        raise InvalidRequest("the request body is empty; send a JSON object")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return data


def request_id(request: Request) -> str | None:
    return request.scope.get("state", {}).get("request_id")


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Run ``work``; cancel it if the client goes away first."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        task.cancel()
        raise ClientDisconnected("the client disconnected before the answer was ready")
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
