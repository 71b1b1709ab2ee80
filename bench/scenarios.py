"""The measurements, each against one running server."""

from __future__ import annotations

import asyncio
import json
import statistics
from dataclasses import dataclass, field

import httpx

from . import workload
from .client import Timing, body, stream_chat
from .direct import Baseline
from .servers import Server
from .wire import Connection, WireError

CONCURRENCY = (1, 4, 8, 16)
DECODE_STREAMS = (1, 8)
STORY_TOKENS = 128


@dataclass
class Results:
    """What one server measured; seconds and tokens per second."""

    decode_rate: float = 0.0
    ttft: float = 0.0
    aggregate: dict[int, float] = field(default_factory=dict)
    cold_prefix_ttft: float = 0.0
    warm_prefix_ttft: float = 0.0
    warm_cached_tokens: int | None = None
    one_token: list[float] = field(default_factory=list, repr=False)
    one_token_direct: list[float] = field(default_factory=list, repr=False)


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=64))


async def single_stream(server: Server, results: Results, runs: int = 3) -> None:
    """One request at a time; each with its own subject, so no prompt repeats."""
    async with _client() as client:
        await stream_chat(client, server, workload.story(99), 8)  # warm-up
        timings = [await stream_chat(client, server, workload.story(i), STORY_TOKENS)
                   for i in range(runs)]
    results.decode_rate = statistics.median(t.decode_rate for t in timings)
    results.ttft = statistics.median(t.ttft for t in timings)


async def concurrent(server: Server, results: Results,
                     counts: tuple[int, ...] = CONCURRENCY) -> None:
    """``n`` streams started together; total tokens over the wall time of all of them."""
    async with _client() as client:
        for n in counts:
            timings: list[Timing] = await asyncio.gather(*(
                stream_chat(client, server, workload.story(i), STORY_TOKENS)
                for i in range(n)))
            wall = max(t.finished for t in timings) - min(t.started for t in timings)
            results.aggregate[n] = sum(t.tokens for t in timings) / wall


async def prefix(server: Server, results: Results, words: int, runs: int = 3) -> None:
    """A long document never seen before (cold), then a new question on it (warm)."""
    cold: list[float] = []
    warm: list[Timing] = []
    async with _client() as client:
        for run in range(runs):
            text = workload.document(1000 + run, words)
            first = workload.about_document(text, "Which word is most common?")
            again = workload.about_document(text, "Which word comes last?")
            cold.append((await stream_chat(client, server, first, 4)).ttft)
            warm.append(await stream_chat(client, server, again, 4))
    results.cold_prefix_ttft = statistics.median(cold)
    results.warm_prefix_ttft = statistics.median(t.ttft for t in warm)
    results.warm_cached_tokens = warm[-1].cached_tokens


async def one_token_latency(server: Server, baseline: Baseline, results: Results,
                            rounds: int = 10, block: int = 20) -> None:
    """Back-to-back one-token replies to the same prompt (its prefix stays cached), in
    blocks that take turns with the same work in process (``baseline``)."""
    async with Connection(server.chat_url, server.headers) as connection, baseline:
        request = connection.request(json.dumps(
            body(server, workload.short_question(), 1, stream=False)).encode())

        async def timed() -> float:
            started = asyncio.get_running_loop().time()
            status, reply = await connection.exchange(request)
            elapsed = asyncio.get_running_loop().time() - started
            if status != 200 or not json.loads(reply).get("choices"):
                raise WireError(f"{server.name} answered {status}: {reply[:200]!r}")
            return elapsed

        for _ in range(10):  # warm-up
            await timed()
            await baseline.once()
        for _ in range(rounds):
            results.one_token += [await timed() for _ in range(block)]
            results.one_token_direct += [await baseline.once() for _ in range(block)]


async def decode(server: Server) -> Results:
    """Single-stream decode and 8 streams together: the decode comparison."""
    results = Results()
    await single_stream(server, results)
    await concurrent(server, results, DECODE_STREAMS)
    return results


async def measure(server: Server, words: int, baseline: Baseline) -> Results:
    results = Results()
    await single_stream(server, results)
    await concurrent(server, results)
    await prefix(server, results, words)
    await one_token_latency(server, baseline, results)
    return results
