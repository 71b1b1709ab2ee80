"""Racing a reply against the client's disconnect (``http.cancellation.until_disconnect``)."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from b3os_infer.errors import ClientDisconnected
from b3os_infer.http.cancellation import until_disconnect


def _request(disconnect: asyncio.Event) -> Request:
    async def receive() -> dict[str, object]:
        await disconnect.wait()
        return {"type": "http.disconnect"}

    return Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)


def test_the_work_answers_when_the_client_stays():
    async def run() -> tuple[str, int]:
        gone = asyncio.Event()

        async def work() -> str:
            await asyncio.sleep(0.01)
            return "done"

        answer = await until_disconnect(_request(gone), work())
        await asyncio.sleep(0.01)  # the task goes on normally: no cancellation is left over
        return answer, len(asyncio.all_tasks())

    answer, tasks = asyncio.run(run())
    assert answer == "done" and tasks == 1  # the watcher is gone too


def test_a_disconnect_cancels_the_work_and_says_so():
    async def run() -> tuple[list[str], str]:
        gone = asyncio.Event()
        seen: list[str] = []

        async def work() -> str:
            try:
                await asyncio.sleep(30)
            finally:
                seen.append("cleaned up")
            return "never"

        asyncio.get_running_loop().call_later(0.01, gone.set)
        with pytest.raises(ClientDisconnected):
            await until_disconnect(_request(gone), work())
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0
        await asyncio.sleep(0)  # and this task may still await after it
        return seen, "after"

    assert asyncio.run(run()) == (["cleaned up"], "after")
