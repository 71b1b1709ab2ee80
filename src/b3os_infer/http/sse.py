"""Server-sent events: frames are serialised once, here; idle streams are kept alive."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

E = TypeVar("E")

# a comment line: SSE parsers (the OpenAI SDKs' among them) skip it
PING_COMMENT = b": ping\n\n"
KEEPALIVE_SECONDS = 10.0


def dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def data_frame(payload: dict[str, Any] | str) -> bytes:
    """An unnamed frame (OpenAI); a string is sent as is, e.g. ``[DONE]``."""
    body = payload if isinstance(payload, str) else dumps(payload)
    return f"data: {body}\n\n".encode()


def json_data_frame(data: bytes) -> bytes:
    """An unnamed frame of JSON already serialised (a model's ``to_json``)."""
    return b"data: " + data + b"\n\n"


SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def named_frame(event: str, data: bytes) -> bytes:
    """A named frame around JSON that is already serialised (a wire model's bytes)."""
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


class _End:
    """The frames ran out."""


async def with_pings(frames: AsyncIterator[bytes], ping: bytes,
                     seconds: float = KEEPALIVE_SECONDS) -> AsyncIterator[bytes]:
    """``frames`` as they come, with ``ping`` whenever ``seconds`` pass without one (a long
    prompt being processed), so clients and proxies with idle timeouts keep the stream.

    The frames are read by a task of their own into a short queue, and a timer puts the
    ping in; there is no task or wait per frame. A failure of ``frames`` is raised here;
    closing this stream cancels the reading."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | _End | Exception] = asyncio.Queue(maxsize=32)
    last = loop.time()

    async def pump() -> None:
        nonlocal last
        try:
            async for frame in frames:
                last = loop.time()
                await queue.put(frame)
        except Exception as exc:  # noqa: BLE001 - raised again by the reader
            await queue.put(exc)
            return
        await queue.put(_End())

    timer: asyncio.TimerHandle | None = None

    def tick() -> None:
        nonlocal timer
        idle = loop.time() - last
        if idle >= seconds and queue.empty():
            queue.put_nowait(ping)
            idle = 0.0
        timer = loop.call_later(max(seconds - idle, 0.0), tick)

    timer = loop.call_later(seconds, tick)
    reader = asyncio.create_task(pump())
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _End):
                return
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        if timer is not None:
            timer.cancel()
        reader.cancel()


def event_stream(events: AsyncIterator[E], encode: Callable[[E], Iterable[bytes]],
                 failed: Callable[[Exception], bytes], ping: bytes,
                 seconds: float = KEEPALIVE_SECONDS) -> AsyncIterator[bytes]:
    """The body of a streamed response: each event's frames as ``encode`` makes them, a
    failure after the 200 as the one frame ``failed`` makes of it (the API's error event),
    and ``ping`` in every silence of ``seconds`` (``with_pings``)."""
    return with_pings(_encoded(events, encode, failed), ping, seconds)


async def _encoded(events: AsyncIterator[E], encode: Callable[[E], Iterable[bytes]],
                   failed: Callable[[Exception], bytes]) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            for frame in encode(event):
                yield frame
    except Exception as exc:  # noqa: BLE001 - every failure must reach the client
        yield failed(exc)
