"""Wrapping route handlers so that every failure is an ``InferError``.

The app's exception handler answers it in the envelope of the route's API
(``envelopes.py``, above the wire packages that use this module).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TypeVar, cast

from starlette.requests import Request
from starlette.responses import Response

from ..errors import InferError, InternalError, in_terms_of
from .cancellation import cancellable
from .requests import CURRENT_REQUEST_ID

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


def report(error: InferError, rid: str | None = None) -> InferError:
    """An error on its way to the client: its inside detail goes to the log with the
    request id, and the client's message names that id (once, however often called)."""
    if error.detail is None:
        return error
    rid = rid or CURRENT_REQUEST_ID.get()
    log.error("request %s failed: %s: %s", rid, error.message, error.detail)
    error.detail = None
    if rid:
        error.message = f"{error.message} (request {rid}; the server log has the detail)"
    return error


def as_infer_error(exc: BaseException) -> InferError:
    if isinstance(exc, InferError):
        return report(exc)
    rid = CURRENT_REQUEST_ID.get()
    log.error("request %s: unexpected failure", rid, exc_info=exc)
    return InternalError("the server failed while handling this request; it has been logged"
                         + (f" under {rid}" if rid else ""))


def infer_error_in(names: Mapping[str, str]) -> Callable[[BaseException], InferError]:
    """``as_infer_error`` for a stream whose API names the neutral params by ``names``."""
    def convert(exc: BaseException) -> InferError:
        return in_terms_of(as_infer_error(exc), names)
    return convert


def endpoint(handler: Handler) -> Handler:
    """Every failure an ``InferError``; the whole handler raced against the disconnect."""
    raced = cancellable(handler)

    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            return await raced(request)
        except InferError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged, and answered as an internal error
            raise as_infer_error(exc) from exc

    return wrapper


async def prepend(first: object, rest: AsyncIterator) -> AsyncIterator:  # type: ignore[type-arg]
    yield first
    async for item in rest:
        yield item


async def opened(events: AsyncIterator[T], *, first_now: bool) -> AsyncIterator[T]:
    """A stream's events with the first one awaited now, so that what fails before it
    (limits, the prompt) is an HTTP error; or, when ``first_now`` is False (its model must
    load first), left for the stream to wait for, pinging the client meanwhile, with a
    failure then sent as the stream's error event."""
    if not first_now:
        return events
    first = await anext(events)
    return cast(AsyncIterator[T], prepend(first, events))
