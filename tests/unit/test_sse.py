"""Server-sent event frames and the keep-alive that pings idle streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from b3os_infer.http.sse import PING_COMMENT, json_data_frame, with_pings


async def slow(frames: list[bytes], pause: float) -> AsyncIterator[bytes]:
    for frame in frames:
        await asyncio.sleep(pause)
        yield frame


async def collect(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [frame async for frame in stream]


def test_a_json_frame_wraps_serialised_bytes_as_they_are():
    assert json_data_frame(b'{"a":1}') == b'data: {"a":1}\n\n'


def test_the_ping_is_an_sse_comment_line():
    assert PING_COMMENT.startswith(b":") and PING_COMMENT.endswith(b"\n\n")


def test_pings_fill_silences_longer_than_the_interval_and_only_those():
    frames = asyncio.run(collect(with_pings(slow([b"a", b"b"], 0.25), b"P", 0.1)))
    assert frames[-1] == b"b" and frames.index(b"a") < frames.index(b"b")
    assert 2 <= frames[:frames.index(b"a")].count(b"P") <= 3
    quick = asyncio.run(collect(with_pings(slow([b"a", b"b", b"c"], 0.0), b"P", 0.1)))
    assert quick == [b"a", b"b", b"c"]


def test_a_failure_of_the_frames_reaches_the_reader_after_what_came_before():
    async def failing() -> AsyncIterator[bytes]:
        yield b"a"
        raise ValueError("boom")

    async def run() -> list[bytes]:
        seen = []
        with pytest.raises(ValueError, match="boom"):
            async for frame in with_pings(failing(), b"P", 10):
                seen.append(frame)
        return seen

    assert asyncio.run(run()) == [b"a"]


def test_closing_the_stream_stops_reading_the_frames():
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[bytes]:
        try:
            while True:
                await asyncio.sleep(0.01)
                yield b"x"
        finally:
            closed.set()

    async def run() -> None:
        stream = with_pings(endless(), b"P", 10)
        assert await anext(stream) == b"x"
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.wait_for(closed.wait(), 1)

    asyncio.run(run())
