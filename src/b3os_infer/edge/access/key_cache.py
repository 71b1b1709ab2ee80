"""A bounded cache with a time to live: what the edge remembers of keys between requests.

Two of them sit in front of the key database (``key_gate.py``): verified records, and the
digests of keys that did not verify (unknown, revoked, wrong secret), so a client that
sends a well-formed unknown key again and again does not reach the database each time.
Both are bounded: past ``size`` entries the least recently used goes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TtlCache(Generic[V]):
    def __init__(self, size: int, ttl: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, name: str) -> V | None:
        entry = self._entries.get(name)
        if entry is None:
            return None
        if self._clock() - entry[0] >= self.ttl:
            del self._entries[name]
            return None
        self._entries.move_to_end(name)
        return entry[1]

    def put(self, name: str, value: V) -> None:
        self._entries[name] = (self._clock(), value)
        self._entries.move_to_end(name)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
