"""Clients that go away, against the real server process on the scripted engine: whatever
they held (a place in the edge's queue, an engine sequence) is free at once, the ledger
says 499 for them, and the server goes on answering (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import httpx
import pytest

from support.scripted_server import MODEL, ROUTES, ScriptedServer, scripted_server

CUT = "cut"                  # the client gave up before the response's head
CUT_STREAMING = "cut-streaming"   # ... after it, in the middle of the stream


UNLIMITED = {"default": {"requests_per_minute": 100_000,
                         "output_tokens_per_minute": 100_000_000,
                         "input_tokens_per_minute": 100_000_000}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("disconnects")
    with scripted_server(home, concurrency={"default": {"running": 16, "waiting": 64}},
                         limits=UNLIMITED) as started:
        yield started


def _client(server: ScriptedServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.base_url, headers={"x-api-key": server.key},
                             timeout=60, limits=httpx.Limits(max_connections=None))


async def streamed(client: httpx.AsyncClient, path: str, word: str,
                   give_up_after: float | None) -> str:
    """One streamed request: ``completed``, ``CUT`` or ``CUT_STREAMING`` (the client
    gave up first), or the HTTP status it was refused with."""
    outcome = CUT

    async def run() -> None:
        nonlocal outcome
        async with client.stream("POST", path, json=ROUTES[path](word)) as response:
            if response.status_code != 200:
                await response.aread()
                outcome = str(response.status_code)
                return
            outcome = CUT_STREAMING
            async for _ in response.aiter_raw():
                pass
        outcome = "completed"

    try:
        await asyncio.wait_for(run(), give_up_after)
    except TimeoutError:
        pass
    return outcome


def _statuses(server: ScriptedServer, since: int) -> Counter[int]:
    return Counter(status for _, status, _ in server.ledger()[since:])


@pytest.mark.parametrize("word", ["PREFILL", "SLOW"])
def test_forty_streaming_clients_that_give_up_after_0_8_s_free_queue_and_engine(server, word):
    """The issue's finding: 40 streaming clients give up after 0.8 s, 16 of them running
    (in a 30 s prefill before the first token, or in a minute-long reply) and 24 queued;
    everything they held is free, and each row says 499."""
    before = len(server.ledger())

    async def run() -> list[str]:
        async with _client(server) as client:
            return await asyncio.gather(*(streamed(client, "/v1/messages", word, 0.8)
                                          for _ in range(40)))

    outcomes = Counter(asyncio.run(run()))
    assert outcomes[CUT] + outcomes[CUT_STREAMING] == 40   # nobody got to the reply's end
    assert server.wait_idle() == {"active": 0, "waiting": 0, "queue_running": 0,
                                  "queue_waiting": 0}
    assert _statuses(server, before) == {499: 40}


def test_a_storm_of_1040_streams_cut_at_random_points_leaves_nothing_behind(server):
    """13 waves of 80 streamed requests on all four routes, each cut at a random moment
    in its first 1.5 s: some while queued behind the 16 running, some mid-stream, some
    not at all (the reply takes 0.4 s)."""
    rng = random.Random(16)
    paths = list(ROUTES)

    async def wave(client: httpx.AsyncClient) -> list[str]:
        return await asyncio.gather(*(streamed(client, rng.choice(paths), "STORM",
                                               rng.uniform(0.0, 1.5)) for _ in range(80)))

    async def storm(waves: int) -> list[str]:
        outcomes: list[str] = []
        async with _client(server) as client:
            for _ in range(waves):
                outcomes += await wave(client)
        return outcomes

    asyncio.run(storm(2))                              # warm up, then measure
    server.wait_idle()
    rss_before, rows_before = server.rss(), len(server.ledger())
    outcomes = Counter(asyncio.run(storm(13)))
    idle = server.wait_idle()
    rss_after = server.rss()
    print(f"storm outcomes {dict(outcomes)}; RSS {rss_before / 2**20:.1f} MiB before, "
          f"{rss_after / 2**20:.1f} MiB after")
    assert sum(outcomes.values()) == 1040
    assert min(outcomes[CUT], outcomes[CUT_STREAMING], outcomes["completed"]) > 50
    assert idle == {"active": 0, "waiting": 0, "queue_running": 0, "queue_waiting": 0}
    assert rss_after - rss_before < 40 * 2**20
    statuses = _statuses(server, rows_before)
    # every request the server saw has its row (some were cut before they were sent)
    assert outcomes["completed"] + outcomes[CUT_STREAMING] <= sum(statuses.values()) <= 1040
    assert statuses[200] >= outcomes["completed"]
    assert statuses[499] >= outcomes[CUT_STREAMING] - (statuses[200] - outcomes["completed"])
    assert set(statuses) <= {200, 499}
    # and the next request is answered whole
    answer = httpx.post(server.base_url + "/chat/completions", json=ROUTES[
        "/chat/completions"]("hello", stream=False), headers={"x-api-key": server.key},
        timeout=30)
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "Hello there, friend."


def test_200_concurrent_streams_on_one_process_complete_with_bounded_memory(tmp_path):
    """200 streams held at once (50 tokens, 0.1 s apart) on one process."""
    with scripted_server(tmp_path, concurrency={"default": {"running": 256, "waiting": 0}},
                         limits=UNLIMITED) as server:
        rss, active = [server.rss()], [0]

        async def sample(stop: asyncio.Event) -> None:
            while not stop.is_set():
                rss.append(server.rss())
                active.append((await asyncio.to_thread(server.busy))["active"])
                await asyncio.sleep(0.2)

        async def run() -> list[str]:
            stop = asyncio.Event()
            sampler = asyncio.create_task(sample(stop))
            async with _client(server) as client:
                outcomes = await asyncio.gather(*(streamed(client, "/chat/completions",
                                                           "HELD", None) for _ in range(200)))
            stop.set()
            await sampler
            return outcomes

        outcomes = asyncio.run(run())
        peak = max(rss) - rss[0]
        print(f"200 streams: at most {max(active)} at once; RSS {rss[0] / 2**20:.1f} MiB "
              f"idle, peak +{peak / 2**20:.1f} MiB")
        assert Counter(outcomes) == {"completed": 200}
        assert max(active) >= 150        # held together (each lasts 5 s)
        assert peak < 200 * 2**20
        assert server.wait_idle() == {"active": 0, "waiting": 0, "queue_running": 0,
                                      "queue_waiting": 0}
        assert MODEL in server.health()["models"]
