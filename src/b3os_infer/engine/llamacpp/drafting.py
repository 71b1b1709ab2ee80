"""Drafts without a draft model: the tokens a reply is likely to copy next.

What an agent writes mostly repeats its context: the file it read, the edit it rewrites,
the tool output it quotes. So the next tokens are guessed from n-grams: where the last
``KEY`` tokens of the sequence (prompt and reply together) occurred before, the tokens that
followed them then are the draft. Among the occurrences, the one whose match reaches
furthest back wins (a longer match is a surer copy). When the sequence's own tokens know
no continuation, a pool shared by all requests is asked: the replies other requests wrote
recently (a batch of similar requests, a retry, the same edit asked again).

How many tokens are drafted adapts per sequence (``DraftControl``): it grows while whole
drafts are accepted, shrinks to what was accepted when one is not, and after drafts that
keep failing the sequence stops drafting for a while (each failed draft costs the rows it
added to the step). The engine verifies drafts inside its continuous batch
(steps.py); nothing here touches llama.cpp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# the n-gram that must repeat before its continuation is drafted
KEY = 3
# occurrences of an n-gram looked at (the most recent ones), and how far back a match is
# followed to compare them
CANDIDATES = 8
REACH = 32
_GAP = -1   # between two documents of the shared pool: matches no token


@dataclass(frozen=True)
class Draft:
    tokens: list[int]
    matched: int      # how many tokens before the draft repeat what preceded it then


class NgramIndex:
    """A growing token list and where each of its ``KEY``-grams ended."""

    def __init__(self, tokens: Sequence[int] = ()) -> None:
        self.tokens: list[int] = []
        self._ends: dict[tuple[int, ...], list[int]] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        history = self.tokens
        ends = self._ends
        start = max(len(history), KEY - 1)
        history.extend(tokens)
        for end in range(start + 1, len(history) + 1):
            ends.setdefault(tuple(history[end - KEY:end]), []).append(end)

    def continuation(self, tail: Sequence[int], limit: int) -> Draft | None:
        """What followed ``tail``'s last ``KEY`` tokens the last times they occurred (not
        counting an occurrence that ends this index, which has no continuation)."""
        if limit <= 0 or len(tail) < KEY:
            return None
        ends = self._ends.get(tuple(tail[-KEY:]))
        if not ends:
            return None
        history = self.tokens
        best_end, best_match = -1, 0
        for end in reversed(ends[-CANDIDATES - 1:]):
            if end >= len(history):
                continue
            matched = _matched_before(history, end, tail)
            if matched > best_match:
                best_end, best_match = end, matched
        if best_end < 0:
            return None
        draft = history[best_end:best_end + limit]
        if _GAP in draft:   # the pool's next reply is no continuation of this one
            draft = draft[:draft.index(_GAP)]
        return Draft(draft, best_match) if draft else None


def _matched_before(history: list[int], end: int, tail: Sequence[int]) -> int:
    """How many tokens before ``end`` in ``history`` equal the last ones of ``tail``."""
    reach = min(REACH, end, len(tail))
    matched = 0
    while matched < reach and history[end - 1 - matched] == tail[len(tail) - 1 - matched]:
        matched += 1
    return matched


class SharedPool:
    """Replies of recent requests, for drafts a sequence's own tokens cannot give.

    Bounded to ``capacity`` tokens: when full it keeps the newer half."""

    def __init__(self, capacity: int = 65536) -> None:
        self.capacity = capacity
        self._index = NgramIndex()

    def add(self, reply: Sequence[int]) -> None:
        if len(reply) <= KEY or self.capacity <= 0:
            return
        if len(self._index) + len(reply) + 1 > self.capacity:
            kept = self._index.tokens[len(self._index) // 2:]
            self._index = NgramIndex(kept[-max(self.capacity - len(reply) - 1, 0):])
        self._index.extend([*reply, _GAP])

    def continuation(self, tail: Sequence[int], limit: int) -> Draft | None:
        return self._index.continuation(tail, limit)


@dataclass
class DraftControl:
    """How many tokens one sequence drafts next, from how its drafts fared.

    ``length`` doubles after a draft accepted whole and falls to what was accepted (at
    least ``MIN``) after one that was not. In a lane with flash attention (``tiled``), a
    length of ``WHOLE_FROM`` or more drafts ``MAX`` tokens: llama.cpp's CPU flash
    attention takes 64 or more rows of one sequence through its tiled kernel and fewer one
    row at a time, so a step of 65 rows (the sequence's token, a 64-token draft) costs less
    than one of 40 (docs/engine.md has the figures); 64 drafted rows also stay 64 when
    llama.cpp splits the sequence's first row into a micro-batch with the other sequences'
    single rows. Without flash attention a step costs about the same per row whatever
    its rows, and the length is drafted as it is. After ``PATIENCE`` drafts in
    a row with nothing accepted, drafting pauses for ``pause`` steps, a pause that doubles
    each time it recurs (up to ``MAX_PAUSE``) and resets with the next accepted draft."""

    MIN = 2
    MAX = 64
    WHOLE_FROM = 24
    PATIENCE = 3
    FIRST_PAUSE = 8
    MAX_PAUSE = 256

    length: int = 8
    failures: int = 0
    pause: int = FIRST_PAUSE
    resting: int = 0
    drafted: int = 0
    accepted: int = 0

    def wanted(self, *, tiled: bool) -> int:
        """Tokens to draft this step (0: none)."""
        if self.resting > 0:
            self.resting -= 1
            return 0
        return self.MAX if tiled and self.length >= self.WHOLE_FROM else self.length

    def record(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted
        if accepted == drafted:
            self.length = min(self.length * 2, self.MAX)
        else:
            self.length = max(accepted, self.MIN)
        if accepted:
            self.failures = 0
            self.pause = self.FIRST_PAUSE
            return
        self.failures += 1
        if self.failures >= self.PATIENCE:
            self.resting = self.pause
            self.pause = min(self.pause * 2, self.MAX_PAUSE)
            self.failures = 0


def draft_for(history: NgramIndex, pool: SharedPool | None, limit: int, *,
              copies_only: bool = False) -> list[int]:
    """The draft for a sequence whose tokens so far are ``history``: its own n-grams
    first, then the pool's. A short match drafts at most as many tokens as it matched
    (a chance repeat of a few tokens rarely goes on for long), or nothing with
    ``copies_only``; one that reaches ``REACH`` back is a copy in progress and drafts what
    ``limit`` allows."""
    tail = history.tokens[-REACH:]
    found = history.continuation(tail, limit)
    if found is None and pool is not None:
        found = pool.continuation(tail, limit)
    if found is None:
        return []
    if found.matched >= REACH:
        return found.tokens
    if copies_only:
        return []
    return found.tokens[:max(found.matched, KEY)]
