"""The agent scenario: Claude Code's recorded first request, replayed to a server.

Three requests, each timed to its first token: the recorded request on a server that has
never seen it (cold); a new conversation with the same system prompt and tools (only the
user's prompt differs); and, after the server was stopped and started again, a third
conversation with that prefix. Both servers get the same body on their Messages route
(llama-server speaks it too), so both render it with the GGUF's own chat template.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .servers import Server

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / \
    "claude_code_first_request.json"
BILLING_HEADER = "x-anthropic-billing-header:"
# enough to see the first token; the time to first token is what is measured
REPLY_TOKENS = 8
PROMPTS = {
    "cold": None,   # the recorded prompt
    "new conversation": "List the files in this directory.",
    "after restart": "What does this project do?",
}


def recorded(fixture: Path = FIXTURE) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(fixture.read_text())["request"]
    return body


def replay(body: dict[str, Any], model: str, prompt: str | None) -> dict[str, Any]:
    """The recorded body for ``model``, with ``prompt`` as the user's last text if given.

    Claude Code's per-request billing line leaves the system prompt: ours drops it itself,
    llama-server would render it; without it both see the same text. The reply is cut at
    a few tokens."""
    request = copy.deepcopy(body)
    request["model"] = model
    request["max_tokens"] = REPLY_TOKENS
    request["stream"] = True
    system = request.get("system")
    if isinstance(system, list):
        request["system"] = [block for block in system
                             if not str(block.get("text", "")).startswith(BILLING_HEADER)]
    if prompt is not None:
        content = request["messages"][-1]["content"]
        if isinstance(content, str):
            request["messages"][-1]["content"] = prompt
        else:
            texts = [i for i, block in enumerate(content) if block.get("type") == "text"]
            content[texts[-1]] = {"type": "text", "text": prompt}
    return request


@dataclass(frozen=True)
class Reply:
    """One replayed request as the client saw it."""

    ttft: float
    total: float
    computed_tokens: int   # prompt tokens not read from a cache
    cached_tokens: int     # prompt tokens read from the cache

    @property
    def prompt_tokens(self) -> int:
        return self.computed_tokens + self.cached_tokens


class Usage:
    """The usage a Messages stream reports, the last word winning. Anthropic counts a
    prompt in three parts: ``input_tokens`` (neither read nor written to a cache),
    ``cache_creation_input_tokens`` (written) and ``cache_read_input_tokens`` (read)."""

    def __init__(self) -> None:
        self.parts = {"input_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}

    def read(self, event: dict[str, Any]) -> None:
        usage = event.get("usage") or (event.get("message") or {}).get("usage") or {}
        for part in self.parts:
            if usage.get(part) is not None:
                self.parts[part] = int(usage[part])

    @property
    def computed(self) -> int:
        return self.parts["input_tokens"] + self.parts["cache_creation_input_tokens"]

    @property
    def cached(self) -> int:
        return self.parts["cache_read_input_tokens"]


def is_first_token(event: dict[str, Any]) -> bool:
    """A content delta of any kind: text, thinking or a tool call's input."""
    return event.get("type") == "content_block_delta"


async def events(client: httpx.AsyncClient, server: Server,
                 body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """The events of one streamed Messages request; a refusal or a streamed error raises."""
    headers = {**server.headers, "anthropic-version": "2023-06-01"}
    async with client.stream("POST", server.messages_url, headers=headers,
                             json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{server.name} answered {response.status_code}: "
                               f"{(await response.aread())[:500]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event.get("type") == "error":
                raise RuntimeError(f"{server.name} streamed an error: {event}")
            yield event


async def send(client: httpx.AsyncClient, server: Server, body: dict[str, Any]) -> Reply:
    started = time.perf_counter()
    first: float | None = None
    usage = Usage()
    async for event in events(client, server, body):
        usage.read(event)
        if first is None and is_first_token(event):
            first = time.perf_counter()
    finished = time.perf_counter()
    return Reply(ttft=(first or finished) - started, total=finished - started,
                 computed_tokens=usage.computed, cached_tokens=usage.cached)


Launch = Callable[[], AbstractContextManager[Server]]
Say = Callable[[str], None]


async def run(launch: Launch, say: Say, body: dict[str, Any] | None = None,
              transport: httpx.AsyncBaseTransport | None = None,
              restart: bool = True) -> dict[str, Reply]:
    """The steps against the server ``launch`` starts, and starts again unless told not to
    (then there is no "after restart" reply)."""
    body = body if body is not None else recorded()
    replies: dict[str, Reply] = {}
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None),
                                 transport=transport) as client:

        async def step(server: Server, name: str) -> None:
            say(f"agent, {server.name}: {name}")
            replies[name] = await send(client, server, replay(body, server.model,
                                                              PROMPTS[name]))
            say(f"agent, {server.name}: {name}: {replies[name]}")

        with launch() as server:
            await step(server, "cold")
            await step(server, "new conversation")
        if restart:
            with launch() as server:
                await step(server, "after restart")
    return replies
