"""A smaller disconnect storm on the real llama.cpp engine (the embedded model): 50
streamed requests cut at random points, some while waiting for one of the engine's 8
slots, some while the edge queues them (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

import httpx
import psutil

MODEL = "b3os/smollm2-135m-instruct"


def _server_process(root: str) -> psutil.Process:
    port = int(root.rsplit(":", 1)[1])
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port:
            assert connection.pid is not None
            return psutil.Process(connection.pid)
    raise AssertionError(f"nothing listens on {port}")


def _busy(root: str) -> dict[str, int]:
    health = httpx.get(root + "/healthz", timeout=10).json()
    queue = health["queues"].get(MODEL, {"running": 0, "waiting": 0})
    engine = health["models"][MODEL]
    return {"active": engine["active"], "waiting": engine["waiting"],
            "queue_running": queue["running"], "queue_waiting": queue["waiting"]}


async def _cut(client: httpx.AsyncClient, path: str, body: dict[str, object],
               after: float) -> str:
    outcome = "cut"

    async def run() -> None:
        nonlocal outcome
        async with client.stream("POST", path, json=body) as response:
            outcome = "cut-streaming" if response.status_code == 200 else str(
                response.status_code)
            async for _ in response.aiter_raw():
                pass
        outcome = "completed"

    try:
        await asyncio.wait_for(run(), after)
    except TimeoutError:
        pass
    return outcome


def test_fifty_streams_cut_at_random_points_free_every_slot_and_queue_place(live):
    rng = random.Random(50)
    process = _server_process(live.root)
    story = [{"role": "user", "content": "Write a very long story about a lighthouse."}]
    bodies = {"/v1/messages": {"model": MODEL, "max_tokens": 2000, "stream": True,
                               "messages": story},
              "/chat/completions": {"model": MODEL, "max_tokens": 2000, "stream": True,
                                    "messages": story}}

    async def storm() -> Counter[str]:
        async with httpx.AsyncClient(base_url=live.base_url, timeout=120,
                                     headers={"x-api-key": live.key}) as client:
            paths = [rng.choice(list(bodies)) for _ in range(50)]
            return Counter(await asyncio.gather(*(
                _cut(client, path, bodies[path], rng.uniform(0.2, 4.0)) for path in paths)))

    rss_before = process.memory_info().rss
    outcomes = asyncio.run(storm())
    state = _busy(live.root)
    for _ in range(150):           # up to 15 s
        if not any(state.values()):
            break
        time.sleep(0.1)
        state = _busy(live.root)
    rss_after = process.memory_info().rss
    print(f"llama.cpp storm {dict(outcomes)}; RSS {rss_before / 2**20:.0f} -> "
          f"{rss_after / 2**20:.0f} MiB")
    assert sum(outcomes.values()) == 50 and outcomes["completed"] == 0
    assert state == {"active": 0, "waiting": 0, "queue_running": 0, "queue_waiting": 0}
    # measured +17 to +26 MiB after the 50 cut streams (docs/reliability.md); 40 MiB is the
    # most measured with 14 MiB to spare
    assert rss_after - rss_before < 40 * 2**20
    answer = httpx.post(live.base_url + "/chat/completions", headers={"x-api-key": live.key},
                        json={"model": MODEL, "max_tokens": 5, "messages": [
                            {"role": "user", "content": "Say hi"}]}, timeout=60)
    assert answer.status_code == 200 and answer.json()["usage"]["completion_tokens"] >= 1
