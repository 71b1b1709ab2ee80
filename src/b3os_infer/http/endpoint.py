"""Wrapping route handlers so every failure leaves in the route's own envelope."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ..errors import InferError, InternalError
from .formats import error_response
from .requests import request_id

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]


def as_infer_error(exc: BaseException) -> InferError:
    if isinstance(exc, InferError):
        return exc
    log.error("unexpected failure", exc_info=exc)
    return InternalError("the server failed while handling this request; it has been logged")


def endpoint(handler: Handler) -> Handler:
    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:  # noqa: BLE001 - mapped to the API's envelope
            return error_response(request.url.path, as_infer_error(exc), request_id(request))

    return wrapper


async def prepend(first: object, rest: AsyncIterator) -> AsyncIterator:  # type: ignore[type-arg]
    yield first
    async for item in rest:
        yield item
