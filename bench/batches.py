"""Ours only (the peer has no batches): a Message Batch of 50 requests, checked against
the same requests sent one by one (greedy), and interactive latency while it runs: the
time to the first token of a streamed chat request idle and while the batch runs, and
their ratio (target: at most ``TARGET_RATIO``). Only the interactive requests that ended
while the batch still ran count as "during"; the table says how many did.

Part of ``make bench`` (on the embedded model); ``python -m bench.batches`` runs it alone,
``--pack qwen2.5-coder-0.5b`` on an installed model pack instead."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass

import httpx

from . import workload
from .client import Timing, stream_chat
from .servers import Server

REQUESTS = 50
MAX_TOKENS = 32
STORY_TOKENS = 64
TARGET_RATIO = 1.5   # interactive first token during a batch / idle (issue 28)


@dataclass
class BatchResults:
    requests: int
    matching: int           # batch results equal to the same request sent alone
    batch_seconds: float    # from create to ended
    ttft_alone: float       # median interactive time to first token, no batch
    ttft_during: float | None   # ... while the batch runs (None: none ended during it)
    total_alone: float      # median interactive request time, no batch
    total_during: float | None
    during: int             # interactive requests that ended while the batch ran

    @property
    def ttft_ratio(self) -> float | None:
        return None if self.ttft_during is None else self.ttft_during / self.ttft_alone


def _params(server: Server, index: int) -> dict[str, object]:
    return {"model": server.model, "max_tokens": MAX_TOKENS, "temperature": 0,
            "messages": workload.story(300 + index)}


def _texts(message: dict[str, object]) -> str:
    blocks = message.get("content")
    if not isinstance(blocks, list):
        return ""
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


async def _one_by_one(client: httpx.AsyncClient, root: str, server: Server,
                      requests: int) -> list[str]:
    texts = []
    for i in range(requests):
        reply = await client.post(root + "/messages", headers=server.headers,
                                  json=_params(server, i))
        reply.raise_for_status()
        texts.append(_texts(reply.json()))
    return texts


async def _interactive(client: httpx.AsyncClient, server: Server, runs: int,
                       batch: asyncio.Task[float] | None = None) -> list[Timing]:
    """``runs`` streamed requests one after another; with ``batch``, those that ended
    while it still ran (the first one that did not ends the series)."""
    timings = []
    for i in range(runs):
        timing = await stream_chat(client, server, workload.story(700 + i), STORY_TOKENS)
        if batch is not None and batch.done():
            break
        timings.append(timing)
    return timings


def _medians(timings: list[Timing]) -> tuple[float, float]:
    """Median time to first token and whole time of some requests."""
    return (statistics.median(t.ttft for t in timings),
            statistics.median(t.total for t in timings))


async def _run_batch(client: httpx.AsyncClient, root: str, server: Server, requests: int
                     ) -> tuple[str, asyncio.Task[float]]:
    started = time.perf_counter()
    created = await client.post(root + "/messages/batches", headers=server.headers, json={
        "requests": [{"custom_id": f"r{i}", "params": _params(server, i)}
                     for i in range(requests)]})
    created.raise_for_status()
    batch_id = created.json()["id"]

    async def ended() -> float:
        while True:
            state = await client.get(f"{root}/messages/batches/{batch_id}",
                                     headers=server.headers)
            if state.json()["processing_status"] == "ended":
                return time.perf_counter() - started
            await asyncio.sleep(0.2)

    return batch_id, asyncio.create_task(ended())


async def measure_batches(server: Server, runs: int = 5,
                          requests: int = REQUESTS) -> BatchResults:
    root = server.chat_url.removesuffix("/chat/completions") + "/v1"
    async with httpx.AsyncClient(timeout=600) as client:
        alone = await _one_by_one(client, root, server, requests)
        ttft_alone, total_alone = _medians(await _interactive(client, server, runs))
        batch_id, ended = await _run_batch(client, root, server, requests)
        await asyncio.sleep(1.0)   # the batch is running
        during = await _interactive(client, server, runs, ended)
        # none ended during a batch that ended first: the report says so
        ttft_during, total_during = _medians(during) if during else (None, None)
        batch_seconds = await ended
        results = await client.get(f"{root}/messages/batches/{batch_id}/results",
                                   headers=server.headers)
    lines = [json.loads(line) for line in results.content.splitlines() if line.strip()]
    found = {line["custom_id"]: line["result"] for line in lines}
    matching = sum(1 for i, text in enumerate(alone)
                   if found.get(f"r{i}", {}).get("type") == "succeeded"
                   and _texts(found[f"r{i}"]["message"]) == text)
    return BatchResults(requests, matching, batch_seconds, ttft_alone, ttft_during,
                        total_alone, total_during, len(during))


NONE_DURING = ("no interactive request ended while the batch ran: give the batch more "
               "requests (--requests)")


def _versus(alone: float, during: float | None, note: str = "") -> str:
    """``alone / during (ratio; note)`` in milliseconds, or why there is no ratio."""
    if during is None:
        return f"{alone * 1000:.0f} ms / - ({NONE_DURING})"
    return f"{alone * 1000:.0f} ms / {during * 1000:.0f} ms ({during / alone:.2f}x{note})"


def markdown(results: BatchResults) -> str:
    ttft = _versus(results.ttft_alone, results.ttft_during,
                   f"; target <= {TARGET_RATIO}x; {results.during} requests during the batch")
    total = _versus(results.total_alone, results.total_during)
    rows = [
        ("batch results equal to the requests sent alone (greedy)",
         f"{results.matching} / {results.requests}"),
        (f"batch of {results.requests}, create to ended", f"{results.batch_seconds:.1f} s"),
        ("interactive TTFT alone / during the batch", ttft),
        (f"interactive {STORY_TOKENS}-token request alone / during the batch", total),
    ]
    return "\n".join(["| batches (ours only) | |", "|---|---|",
                      *(f"| {name} | {value} |" for name, value in rows)])


def summary(results: BatchResults) -> str:
    """The interactive figures in one line, for the log."""
    if results.ttft_during is None:
        return f"interactive first token: idle {results.ttft_alone * 1000:.0f} ms; " + \
            NONE_DURING
    return (f"interactive first token: idle {results.ttft_alone * 1000:.0f} ms, during the "
            f"batch {results.ttft_during * 1000:.0f} ms, ratio {results.ttft_ratio:.2f}x "
            f"(target <= {TARGET_RATIO}x), {results.during} requests during the batch")


def main() -> None:
    """``python -m bench.batches``: this part alone, on the embedded model or a pack."""
    import argparse
    from contextlib import ExitStack
    from pathlib import Path

    from b3os_infer.compose import DEFAULT_MODEL_WINDOW
    from b3os_infer.config import EngineConfig, Home
    from b3os_infer.node.cards import default_model_path
    from b3os_infer.packs import installed_gguf

    from .servers import Setup, link_pack, ours, scratch_home
    parser = argparse.ArgumentParser(prog="python -m bench.batches", description=__doc__)
    parser.add_argument("--pack", help="an installed model pack (default: the embedded model)")
    parser.add_argument("--runs", type=int, default=5,
                        help="interactive requests idle, and as many during the batch")
    parser.add_argument("--requests", type=int, default=REQUESTS,
                        help="requests in the batch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engine", action="append", default=[], metavar="LINE",
                        help='a line for the config\'s [engine] section, such as '
                             '\'flash_attention = "on"\' (repeatable)')
    args = parser.parse_args()
    with ExitStack() as stack:
        home = None
        model = default_model_path()
        if args.pack:
            model = installed_gguf(args.pack, Home.resolve().models)
            home = stack.enter_context(scratch_home())
            link_pack(home, args.pack, model)
        setup = Setup(model_path=str(model), threads=args.threads,
                      context_window=DEFAULT_MODEL_WINDOW, parallel=EngineConfig().parallel)
        server = stack.enter_context(ours(setup, Path("bench-servers.log"), home=home,
                                          pack=args.pack, engine=tuple(args.engine)))
        results = asyncio.run(measure_batches(server, args.runs, args.requests))
    print(markdown(results))
    print(summary(results))


if __name__ == "__main__":
    main()
