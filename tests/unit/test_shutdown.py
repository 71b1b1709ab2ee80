"""The shutdown's bound interrupts what a request waits for (``http/shutdown.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from b3os_infer.errors import ShuttingDown
from b3os_infer.http.shutdown import Shutdown, guarded


def test_end_interrupts_a_stream_waiting_for_its_next_event_and_closes_it():
    async def run() -> tuple[list[int], list[str], int]:
        shutdown = Shutdown()
        closed: list[str] = []

        async def events() -> AsyncGenerator[int, None]:
            try:
                yield 1
                await asyncio.sleep(30)    # a token that takes long
                yield 2
            finally:
                closed.append("closed")

        got: list[int] = []
        stream = guarded(shutdown, events())

        async def read() -> None:
            async for event in stream:
                got.append(event)

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.01)
        shutdown.end()
        with pytest.raises(ShuttingDown):
            await reader
        return got, closed, reader.cancelling()

    got, closed, cancelling = asyncio.run(run())
    assert got == [1] and closed == ["closed"] and cancelling == 0


def test_end_interrupts_an_admission_wait_and_later_waits_fail_at_once():
    async def run() -> tuple[str, str]:
        shutdown = Shutdown()

        async def admitted() -> str:
            return await shutdown.interruptible(asyncio.sleep(30, "admitted"))

        waiting = asyncio.create_task(admitted())
        await asyncio.sleep(0.01)
        shutdown.end()
        outcomes = []
        for work in (waiting, shutdown.interruptible(asyncio.sleep(0, "late"))):
            try:
                outcomes.append(await work)
            except ShuttingDown as error:
                outcomes.append(f"{error.status} {error.code}")
        return outcomes[0], outcomes[1]

    assert asyncio.run(run()) == ("503 shutting_down", "503 shutting_down")


def test_a_cancellation_that_is_not_the_shutdowns_stays_a_cancellation():
    async def run() -> bool:
        shutdown = Shutdown()
        task = asyncio.create_task(shutdown.interruptible(asyncio.sleep(30)))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(run())


def test_idle_says_whether_every_request_ended_in_time():
    async def run() -> tuple[bool, bool]:
        shutdown = Shutdown()
        shutdown.entered()
        busy = await shutdown.idle(0.01)
        asyncio.get_running_loop().call_later(0.01, shutdown.left)
        return busy, await shutdown.idle(5)

    assert asyncio.run(run()) == (False, True)
