"""Racing a whole request against its client's disconnect (ASGI ``http.disconnect``).

``cancellable`` wraps a route handler: once the body is read, everything the handler
awaits (the edge's queue and admission, in a fleet the admission long-poll, the wait for
an engine slot, prefill, decode, collecting a whole answer) runs in this task while one
watcher task listens for the disconnect and cancels it, which closes the generation:
the engine frees its sequence, the queue its place. ``EventStream`` does the same for a
streamed body, from its first frame to its last, and closes the body in every case.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..errors import ClientDisconnected
from .shutdown import shutdown_of
from .sse import SSE_HEADERS

T = TypeVar("T")

Handler = Callable[[Request], Awaitable[Response]]


async def race_disconnect(receive: Receive, work: Awaitable[T]) -> T:
    """Await ``work`` in this task; cancel it if the client goes away first.

    One watcher task listens for the disconnect and cancels this task; the work itself
    runs here, without a task of its own (a task and a wait cost tens of microseconds,
    which a one-token request notices). Raises ``ClientDisconnected`` when cut."""
    this = asyncio.current_task()
    assert this is not None, "race_disconnect runs in a task"
    gone = False

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass
        gone = True
        this.cancel()

    watcher = asyncio.create_task(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if not gone:
            raise
        this.uncancel()
        raise ClientDisconnected("the client disconnected before the answer was ready"
                                 ) from None
    finally:
        watcher.cancel()


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:
    return await race_disconnect(request.receive, work)


def cancellable(handler: Handler) -> Handler:
    """The handler raced against the client's disconnect once its body has arrived."""
    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            await request.body()   # kept by the request for the handler
        except ClientDisconnect:
            raise ClientDisconnected("the client disconnected before its body arrived"
                                     ) from None
        return await until_disconnect(request, handler(request))

    return wrapper


class EventStream(StreamingResponse):
    """A server-sent event stream that stops the moment its client goes away.

    The frames are sent from this task while a watcher listens for the disconnect (the
    server does not fail a send to a gone client: it drops it); either way the body, and
    the generation under it, is closed before this returns."""

    def __init__(self, frames: AsyncIterator[bytes]) -> None:
        super().__init__(frames, media_type="text/event-stream", headers=SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await race_disconnect(receive, self._pump(scope, send))
        except ClientDisconnected:
            pass
        finally:
            await _close(self.body_iterator)

    async def _pump(self, scope: Scope, send: Send) -> None:
        shutdown = shutdown_of(scope)
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        while True:
            try:
                async for chunk in self.body_iterator:
                    await send({"type": "http.response.body", "body": chunk,
                                "more_body": True})
                break
            except asyncio.CancelledError:
                # the shutdown's bound, while a frame was leaving: the body ends itself
                # with its API's error event on the next read
                if shutdown is None or not shutdown.absorb():
                    raise
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _close(body: Any) -> None:
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        await aclose()
