"""A streamed body stops and is closed when its client goes away (``EventStream``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from b3os_infer.http.cancellation import EventStream


def test_a_disconnect_mid_stream_closes_the_body_at_once():
    async def run() -> tuple[list[str], list[object]]:
        closed: list[str] = []
        sent: list[object] = []
        gone = asyncio.Event()

        async def frames() -> AsyncIterator[bytes]:
            try:
                yield b"data: 1\n\n"
                gone.set()                 # the client leaves after the first frame
                await asyncio.sleep(30)
                yield b"data: 2\n\n"
            finally:
                closed.append("closed")

        async def receive() -> dict[str, object]:
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            sent.append(message.get("body", message["type"]))

        scope = {"type": "http", "asgi": {"spec_version": "2.3"}}
        await asyncio.wait_for(EventStream(frames())(scope, receive, send), 5)
        return closed, sent

    closed, sent = asyncio.run(run())
    assert closed == ["closed"]
    assert sent == ["http.response.start", b"data: 1\n\n"]   # no end: the client is gone


def test_a_stream_whose_client_stays_ends_normally():
    async def run() -> list[object]:
        sent: list[object] = []

        async def frames() -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"

        async def receive() -> dict[str, object]:
            await asyncio.sleep(30)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            sent.append(message.get("body", message["type"]))

        await EventStream(frames())({"type": "http"}, receive, send)
        await asyncio.sleep(0)
        return sent

    assert asyncio.run(run()) == ["http.response.start", b"data: 1\n\n", b""]
