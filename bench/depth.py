"""The depth scenario: decode speed after Claude Code's recorded first request.

An agent's later tokens are decoded with its whole prompt in the KV cache, about 17,000
tokens of system prompt and tools for Claude Code, and every step of decode attends over
all of it. Three requests with the recorded system prompt and tools (bench/agent.py), each
with its own user prompt that asks for a long answer, 64 tokens each: the first one pays
the cold prefill, the others find the prefix cached, so all three decode at the same depth.
The rate is the tokens after the first over the time from the first streamed delta to the
end of the stream, so no prefill is in it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import httpx

from .agent import Usage, events, is_first_token, recorded, replay
from .servers import Server

TOKENS = 64
# questions whose answers run well past 64 tokens, in prose rather than a tool call
PROMPTS = (
    "Without using any tools, explain in detail how HTTP caching works and which "
    "headers are involved.",
    "Without using any tools, describe step by step how git rebase differs from git merge.",
    "Without using any tools, explain in detail how Python's asyncio event loop runs "
    "coroutines.",
)


@dataclass(frozen=True)
class Reply:
    ttft: float
    decode: float          # seconds from the first delta to the end of the stream
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    stop_reason: str

    @property
    def decode_rate(self) -> float:
        return (self.output_tokens - 1) / self.decode if self.output_tokens > 1 else 0.0


def request(body: dict[str, Any], model: str, prompt: str) -> dict[str, Any]:
    message = replay(body, model, prompt)
    message["max_tokens"] = TOKENS
    return message


async def send(client: httpx.AsyncClient, server: Server, message: dict[str, Any]) -> Reply:
    started = time.perf_counter()
    first: float | None = None
    usage = Usage()
    output, stop = 0, ""
    async for event in events(client, server, message):
        usage.read(event)
        if event.get("type") == "message_delta":
            output = int((event.get("usage") or {}).get("output_tokens") or output)
            stop = str((event.get("delta") or {}).get("stop_reason") or stop)
        if first is None and is_first_token(event):
            first = time.perf_counter()
    finished = time.perf_counter()
    first = first or finished
    return Reply(first - started, finished - first, usage.computed + usage.cached,
                 usage.cached, output, stop)


@dataclass(frozen=True)
class Measured:
    replies: list[Reply]

    @property
    def decode_rate(self) -> float:
        return statistics.median(r.decode_rate for r in self.replies)

    @property
    def depth(self) -> int:
        return min(r.prompt_tokens for r in self.replies)

    @property
    def full(self) -> bool:
        """Every reply decoded all its tokens (none ended early)."""
        return all(r.output_tokens == TOKENS for r in self.replies)


Launch = Callable[[], AbstractContextManager[Server]]
Say = Callable[[str], None]


async def run(launch: Launch, say: Say, body: dict[str, Any] | None = None) -> Measured:
    body = body if body is not None else recorded()
    replies: list[Reply] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None)) as client:
        with launch() as server:
            for number, prompt in enumerate(PROMPTS, start=1):
                reply = await send(client, server, request(body, server.model, prompt))
                say(f"depth, {server.name}: request {number}: {reply}")
                replies.append(reply)
    return Measured(replies)
