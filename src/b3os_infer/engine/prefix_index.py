"""The token-prefix index over the KV pool: which sequence a new prompt can start from.

Every sequence id in the pool is an entry holding the tokens its KV cells hold: a running
sequence's (still growing), or a parked one's, kept only as a cache. A new prompt starts
from the entry sharing its longest prefix, running or parked; parked entries go least
recently used first when the pool or the sequence ids run out. Pure bookkeeping: the
llama.cpp calls that go with it are the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def common_prefix(mine: Sequence[int], theirs: Sequence[int]) -> int:
    """How many leading tokens the two sequences share."""
    n = min(len(mine), len(theirs))
    if n == 0:
        return 0
    a = np.asarray(mine[:n], dtype=np.int64)
    b = np.asarray(theirs[:n], dtype=np.int64)
    differ = np.flatnonzero(a != b)
    return int(differ[0]) if differ.size else n


@dataclass(eq=False)
class Entry:
    """A sequence id and the tokens its cells hold, in order from position 0."""

    seq_id: int
    tokens: list[int] = field(default_factory=list)
    running: bool = True
    last_used: float = 0.0


@dataclass(frozen=True)
class Match:
    """The entry sharing the longest prefix with a prompt, and how long it is."""

    entry: Entry | None
    shared: int


class PrefixIndex:
    """``n_ids`` sequence ids, each free, running or parked."""

    def __init__(self, n_ids: int) -> None:
        self._free = list(range(n_ids - 1, -1, -1))   # popped from the end: 0 first
        self._entries: dict[int, Entry] = {}

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def parked(self) -> list[Entry]:
        return [entry for entry in self._entries.values() if not entry.running]

    def spare(self) -> int:
        """Sequence ids neither running nor parked."""
        return len(self._free)

    def cached_tokens(self) -> int:
        """Tokens held by parked entries (shared cells counted once per entry)."""
        return sum(len(entry.tokens) for entry in self.parked())

    def longest(self, prompt: Sequence[int]) -> Match:
        """The entry sharing the longest prefix; among equals, the most recently used."""
        best: Entry | None = None
        shared = 0
        for entry in self._entries.values():
            count = common_prefix(entry.tokens, prompt)
            if count > shared or (count == shared and count and best is not None
                                  and entry.last_used > best.last_used):
                best, shared = entry, count
        return Match(best, shared)

    def open(self, now: float) -> Entry | None:
        """A new running entry on a free id; None when every id is taken (evict first)."""
        if not self._free:
            return None
        entry = Entry(self._free.pop(), last_used=now)
        self._entries[entry.seq_id] = entry
        return entry

    def park(self, entry: Entry, now: float) -> list[Entry]:
        """The entry stops running and stays as a cache. Parked entries whose tokens are a
        prefix of its own serve nothing it does not: they are removed, and returned so
        their ids' cells can be dropped (cells it shares with them stay, being its too)."""
        entry.running = False
        entry.last_used = now
        if not entry.tokens:
            self.remove(entry)
            return []
        redundant = [other for other in self.parked() if other is not entry
                     and len(other.tokens) <= len(entry.tokens)
                     and common_prefix(other.tokens, entry.tokens) == len(other.tokens)]
        for other in redundant:
            self.remove(other)
        return redundant

    def least_recently_used(self) -> Entry | None:
        """The parked entry to evict first, if any."""
        parked = self.parked()
        return min(parked, key=lambda entry: entry.last_used) if parked else None

    def remove(self, entry: Entry) -> None:
        if self._entries.pop(entry.seq_id, None) is not None:
            self._free.append(entry.seq_id)
