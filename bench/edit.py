"""The edit scenario: a model given a ~100-line file returns it whole with one change.

An agent's replies mostly copy what is already in its context, and a file rewritten with one
change is the plainest case: almost every token of the reply is in the prompt. The file is
``bench/edit_subject.py``; each request states one change as a line to replace and the line
that replaces it, so the expected reply is known exactly. Greedy (``temperature`` 0) on the
OpenAI chat route, one stream at a time and then streams started together.

Every reply is checked against the expected file (code fences, trailing whitespace and the
number of blank lines in a row aside): a reply that writes less, or changes anything else,
fails, and its server's figures are shown as failed instead of counted (no one wins by
writing less). The subject has no module docstring, and its module-level function comes
before its class: both packs leave out a module docstring when they copy a file, and the
1.5B pack stops after the class, so a subject shaped otherwise measures how they forget,
not how fast they copy.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .client import body
from .servers import Server

SUBJECT = Path(__file__).with_name("edit_subject.py")
# a reply is about as long as the file (about 800 tokens for the Qwen2.5 tokenizer); the
# cap leaves room for a model that explains itself, and stops one that loops
MAX_TOKENS = 1600


@dataclass(frozen=True)
class Change:
    """Replace the one line ``old`` (stripped) with ``new``, at the same indentation."""

    old: str
    new: str


# near the top, in the middle and past it, so that every reply copies a different amount
# before and after its change; each one is a change both packs make (of the lines tried, the
# 0.5B pack copied most others unchanged, those near the end of the file included)
CHANGES = (
    Change("MAX_ATTEMPTS = 4", "MAX_ATTEMPTS = 6"),
    Change('last = "no attempt"', 'last = "no attempt made"'),
    Change("return ceiling * jitter()", "return ceiling * jitter() / 2"),
    Change("for url in urls:", "for url in sorted(urls):"),
)


def subject() -> str:
    return SUBJECT.read_text()


def expected(text: str, change: Change) -> str:
    """``text`` with ``change`` applied; the line to replace occurs exactly once."""
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if line.strip() == change.old]
    if len(found) != 1:
        raise ValueError(f"{change.old!r} occurs {len(found)} times in {SUBJECT.name}")
    line = lines[found[0]]
    lines[found[0]] = line[:len(line) - len(line.lstrip())] + change.new
    return "\n".join(lines) + "\n"


def prompt(text: str, change: Change) -> list[dict[str, str]]:
    return [{"role": "user", "content": (
        f"Here is a Python file:\n\n```python\n{text}```\n\n"
        f"Return the whole file with one change: replace the line\n\n    {change.old}\n\n"
        f"with\n\n    {change.new}\n\nkeeping its indentation, and change nothing else. "
        "Reply with the complete file in one ```python code block and nothing more.")}]


def normalise(text: str) -> list[str]:
    """The code of a reply: inside its first fenced block when it has one (a reply cut off
    inside the block keeps what it wrote), without trailing whitespace, with each run of
    blank lines as one, and without blank lines at either end. One blank line for two is a
    token of a reply's ~760, not a way to write less."""
    lines = text.splitlines()
    fences = [i for i, line in enumerate(lines) if line.strip().startswith("```")]
    if fences:
        end = fences[1] if len(fences) > 1 else len(lines)
        lines = lines[fences[0] + 1:end]
    kept: list[str] = []
    for line in (line.rstrip() for line in lines):
        if line or (kept and kept[-1]):
            kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    return kept


def verdict(reply: str, want: str) -> str:
    """``whole`` when the reply is the expected file, else what is wrong with it."""
    got, lines = normalise(reply), normalise(want)
    if got == lines:
        return "whole"
    for number, (mine, theirs) in enumerate(zip(got, lines, strict=False), start=1):
        if mine != theirs:
            return f"differs at line {number} of {len(lines)}"
    return f"{len(got)} lines of {len(lines)}"


@dataclass(frozen=True)
class Reply:
    """One streamed reply as the client saw it."""

    started: float
    first_token: float
    finished: float
    tokens: int
    verdict: str
    drafted: int | None = None    # speculative drafts, where the server reports them
    accepted: int | None = None

    @property
    def whole(self) -> bool:
        return self.verdict == "whole"

    @property
    def decode_rate(self) -> float:
        """Tokens after the first over the time from the first text to the end."""
        span = self.finished - self.first_token
        return (self.tokens - 1) / span if self.tokens > 1 and span > 0 else 0.0


def _drafts(chunk: dict[str, Any]) -> tuple[int | None, int | None]:
    """Draft counts: llama-server's ``timings``, or our usage's ``b3os.speculative``."""
    timings = chunk.get("timings") or {}
    if "draft_n" in timings:
        return int(timings["draft_n"]), int(timings.get("draft_n_accepted", 0))
    spec = ((chunk.get("usage") or {}).get("b3os") or {}).get("speculative") or {}
    if "drafted" in spec:
        return int(spec["drafted"]), int(spec.get("accepted", 0))
    return None, None


async def ask(client: httpx.AsyncClient, server: Server, change: Change) -> Reply:
    text = subject()
    payload = body(server, prompt(text, change), MAX_TOKENS)
    started = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    usage: dict[str, Any] = {}
    drafted = accepted = None
    async with client.stream("POST", server.chat_url, headers=server.headers,
                             json=payload) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{server.name} answered {response.status_code}: "
                               f"{(await response.aread())[:500]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            usage = chunk.get("usage") or usage
            found = _drafts(chunk)
            if found[0] is not None:
                drafted, accepted = found
            choices = chunk.get("choices") or []
            content = choices[0].get("delta", {}).get("content") if choices else None
            if content:
                parts.append(content)
                if first is None:
                    first = time.perf_counter()
    finished = time.perf_counter()
    if "completion_tokens" not in usage:
        raise RuntimeError(f"{server.name} reported no usage in its stream")
    return Reply(started, first or finished, finished, int(usage["completion_tokens"]),
                 verdict("".join(parts), expected(text, change)), drafted, accepted)


@dataclass
class Measured:
    """One server's edit replies: one at a time, then ``streams`` together."""

    single: list[Reply] = field(default_factory=list)
    together: list[Reply] = field(default_factory=list)

    @property
    def single_rate(self) -> float:
        return statistics.median(r.decode_rate for r in self.single)

    @property
    def together_rate(self) -> float:
        """All streams' tokens after their first over the time from the first stream's
        first text to the last stream's end."""
        span = max(r.finished for r in self.together) - \
            min(r.first_token for r in self.together)
        return sum(r.tokens - 1 for r in self.together) / span

    def whole(self, replies: list[Reply]) -> str:
        return f"{sum(r.whole for r in replies)}/{len(replies)}"

    def failures(self) -> list[str]:
        return sorted({r.verdict for r in self.single + self.together if not r.whole})

    def acceptance(self) -> str:
        replies = [r for r in self.single + self.together if r.drafted is not None]
        drafted = sum(r.drafted or 0 for r in replies)
        accepted = sum(r.accepted or 0 for r in replies)
        if not replies:
            return "-"
        share = f" ({accepted / drafted:.0%})" if drafted else ""
        return f"{accepted}/{drafted}{share}"

    def __repr__(self) -> str:
        return (f"Measured(1 stream {self.single_rate:.1f} tok/s, whole "
                f"{self.whole(self.single)}; {len(self.together)} streams "
                f"{self.together_rate:.1f} tok/s, whole {self.whole(self.together)}; "
                f"drafts accepted {self.acceptance()})")


async def measure(server: Server, runs: int = 3, streams: int = 4) -> Measured:
    """``runs`` changes one at a time, then ``streams`` changes together (each stream its
    own change where there are enough)."""
    measured = Measured()
    # a connection per request: llama-server closes one left idle for a few seconds, and a
    # pooled connection it has closed fails the next request ("disconnected without sending
    # a response") while replies take half a minute each
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None),
                                 limits=httpx.Limits(max_connections=16,
                                                     max_keepalive_connections=0)) as client:
        for run in range(runs):
            measured.single.append(await ask(client, server, CHANGES[run % len(CHANGES)]))
        measured.together = list(await asyncio.gather(*(
            ask(client, server, CHANGES[i % len(CHANGES)]) for i in range(streams))))
    return measured
