"""Wrapping route handlers so that every failure is an ``InferError``.

The app's exception handler answers it in the envelope of the route's API
(``envelopes.py``, above the wire packages that use this module).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ..errors import InferError, InternalError

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
        except InferError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged, and answered as an internal error
            raise as_infer_error(exc) from exc

    return wrapper


async def prepend(first: object, rest: AsyncIterator) -> AsyncIterator:  # type: ignore[type-arg]
    yield first
    async for item in rest:
        yield item
