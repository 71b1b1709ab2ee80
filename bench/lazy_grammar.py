"""Decode with and without a lazy tool-call grammar: one long greedy reply each.

    python -m bench.lazy_grammar MODEL.gguf [TOKENS]

Claude Code's 24 tools (``tests/fixtures/claude_code_first_request.json``) as the lazy
grammar a Messages request with tools gets; the reply is a story, so the grammar never
triggers and should cost nothing. Prints tokens per second over the whole reply, its first
100 tokens and its last 100, for both. Loads the model: take the heavy-run lock.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from b3os_infer.core import Sampling, Tool
from b3os_infer.engine.base import GenerationRequest, Grammar, TokenEvent
from b3os_infer.engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from b3os_infer.engine.llamacpp.gbnf import GbnfCompiler
from b3os_infer.engine.memory_plan import KvBudget
from b3os_infer.node.grammar import tool_call_grammar

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / \
    "claude_code_first_request.json"
PROMPT = ("<|im_start|>user\nWrite a very long story about a lighthouse keeper, in at least "
          "2000 words.<|im_end|>\n<|im_start|>assistant\n")


def tools_grammar() -> Grammar:
    request = json.loads(FIXTURE.read_text())["request"]
    tools = [Tool(t["name"], t.get("description"), t["input_schema"]) for t in request["tools"]]
    return tool_call_grammar(GbnfCompiler(), tools, parallel=True, lazy=True)


def rates(stamps: list[float]) -> str:
    def rate(span: list[float]) -> float:
        return (len(span) - 1) / (span[-1] - span[0])
    return (f"{len(stamps)} tokens, {rate(stamps):.1f} tok/s overall, first 100 "
            f"{rate(stamps[:101]):.1f}, last 100 {rate(stamps[-101:]):.1f}")


async def main(model: str, tokens: int) -> None:
    engine = LlamaCppEngine(LlamaCppSettings(model, parallel=2, long_slots=1,
                                             context_window=4096, kv_budget=KvBudget(mib=256)))
    await engine.start()
    try:
        prompt = engine.tokenize(PROMPT)
        for name, grammar in (("no grammar", None), ("lazy tool grammar", tools_grammar())):
            request = GenerationRequest(prompt=prompt, max_tokens=tokens,
                                        sampling=Sampling(temperature=0), grammar=grammar)
            stamps = [time.perf_counter() async for event in engine.generate(request)
                      if isinstance(event, TokenEvent)]
            print(f"{name}: {rates(stamps)}", flush=True)
    finally:
        await engine.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 600))
