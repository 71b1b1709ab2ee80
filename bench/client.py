"""One streamed chat completion, timed at the client as a user would see it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from .servers import Server


@dataclass(frozen=True)
class Timing:
    started: float
    first_token: float  # the first chunk with text (or the end, when there is none)
    finished: float
    tokens: int
    cached_tokens: int | None

    @property
    def ttft(self) -> float:
        return self.first_token - self.started

    @property
    def total(self) -> float:
        return self.finished - self.started

    @property
    def decode_rate(self) -> float:
        """Tokens per second after the first one."""
        span = self.finished - self.first_token
        return (self.tokens - 1) / span if self.tokens > 1 and span > 0 else 0.0


def body(server: Server, messages: list[dict[str, str]], max_tokens: int,
         stream: bool = True) -> dict[str, Any]:
    payload: dict[str, Any] = {"model": server.model, "messages": messages,
                               "max_tokens": max_tokens, "temperature": 0.0,
                               "stream": stream}
    extra = server.extra_body if stream else {
        k: v for k, v in server.extra_body.items() if k != "stream_options"}
    return payload | extra


async def stream_chat(client: httpx.AsyncClient, server: Server,
                      messages: list[dict[str, str]], max_tokens: int) -> Timing:
    """Tokens come from the usage the server reports, or else one per text chunk
    (llama-cpp-python's server sends one chunk per generated token)."""
    started = time.perf_counter()
    first: float | None = None
    chunks = 0
    usage: dict[str, Any] | None = None
    async with client.stream("POST", server.chat_url, headers=server.headers,
                             json=body(server, messages, max_tokens)) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            usage = chunk.get("usage") or usage
            choices = chunk.get("choices") or []
            if choices and choices[0].get("delta", {}).get("content"):
                chunks += 1
                if first is None:
                    first = time.perf_counter()
    finished = time.perf_counter()
    tokens = usage["completion_tokens"] if usage and server.usage_in_stream else chunks
    cached = None
    if usage and usage.get("prompt_tokens_details"):
        cached = usage["prompt_tokens_details"].get("cached_tokens")
    return Timing(started, first or finished, finished, tokens, cached)
