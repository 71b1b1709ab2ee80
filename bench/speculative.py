"""Our engine with and without draft-free speculative decoding: the same edit turns.

    python -m bench.speculative MODEL.gguf [STREAMS ...]

The ``edit`` scenario's file and changes (bench/edit.py) in a ChatML prompt (the
Qwen2.5-Coder packs' format, with Qwen2.5's default system prompt): the file rewritten
whole with one change; greedy. For each number of concurrent streams (default: 1 and
4), the same requests run with speculation off and on, in this process, on one engine
each. Prints tokens per second (every stream's tokens over the wall time from the first
token to the last), acceptance, and whether the replies are byte-identical. Loads the
model: take the heavy-run lock. No peer: ``make bench ARGS="--only edit"`` compares
against llama-server.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass

from b3os_infer.core import Sampling
from b3os_infer.engine.base import GenerationDone, GenerationRequest, TokenEvent
from b3os_infer.engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from b3os_infer.engine.memory_plan import KvBudget

from . import edit


def edit_prompt(change: edit.Change) -> str:
    (message,) = edit.prompt(edit.subject(), change)
    return ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            f"assistant.<|im_end|>\n<|im_start|>user\n{message['content']}<|im_end|>\n"
            "<|im_start|>assistant\n")


@dataclass
class Turn:
    text: str
    tokens: int
    first: float
    last: float
    drafted: int
    accepted: int


async def one(engine: LlamaCppEngine, prompt: list[int], limit: int = 2048) -> Turn:
    request = GenerationRequest(prompt=prompt, max_tokens=limit,
                                sampling=Sampling(temperature=0))
    pieces: list[str] = []
    stamps: list[float] = []
    drafted = accepted = 0
    async for event in engine.generate(request):
        if isinstance(event, TokenEvent):
            stamps.append(time.perf_counter())
            pieces.append(event.text)
        elif isinstance(event, GenerationDone):
            drafted, accepted = event.drafted_tokens, event.accepted_tokens
    return Turn("".join(pieces), len(stamps), stamps[0], stamps[-1], drafted, accepted)


async def run(model: str, speculative: bool, streams: int) -> list[Turn]:
    engine = LlamaCppEngine(LlamaCppSettings(model, parallel=max(streams, 1), long_slots=1,
                                             context_window=8192, speculative=speculative,
                                             kv_budget=KvBudget(mib=1024)))
    await engine.start()
    try:
        prompts = [engine.tokenize(edit_prompt(edit.CHANGES[i % len(edit.CHANGES)]))
                   for i in range(streams)]
        await one(engine, prompts[0], 8)   # warm-up: the file's prefix is then cached
        return list(await asyncio.gather(*(one(engine, p) for p in prompts)))
    finally:
        await engine.close()


def describe(turns: list[Turn]) -> str:
    tokens = sum(t.tokens for t in turns)
    wall = max(t.last for t in turns) - min(t.first for t in turns)
    drafted = sum(t.drafted for t in turns)
    accepted = sum(t.accepted for t in turns)
    share = f"{accepted / drafted:.0%}" if drafted else "-"
    return (f"{tokens} tokens, {tokens / wall:.1f} tok/s; drafted {drafted}, accepted "
            f"{accepted} ({share})")


async def main(model: str, counts: list[int]) -> None:
    for streams in counts:
        plain = await run(model, False, streams)
        drafted = await run(model, True, streams)
        same = [a.text == b.text for a, b in zip(plain, drafted, strict=True)]
        print(f"{streams} stream(s): off {describe(plain)}", flush=True)
        print(f"{streams} stream(s): on  {describe(drafted)}; replies identical: {same}",
              flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], [int(n) for n in sys.argv[2:]] or [1, 4]))
