"""The KV pool: one unified llama.cpp KV cache that every sequence id shares.

Cells are shared, not copied: ``llama_memory_seq_cp`` tags the cells of a prefix with one
more sequence id, so a new request that starts from a cached prefix (a running sequence's,
or a parked one's) costs no memory and no compute for it. Parked entries are the cache:
sequences that finished or were cancelled, kept with every token they computed, evicted
least recently used first when a decode finds no room or the sequence ids run out. Long
parked entries are also written to the disk cache and reloaded from it after a restart.
Only the scheduler thread calls this.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llama_cpp as ll

from .disk_cache import DiskCache
from .prefix_index import Entry, Match, PrefixIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seat:
    """A new running entry, how many prompt tokens it already holds, and the logits row of
    the last decode to sample from when it holds the whole prompt (else None)."""

    entry: Entry
    reuse: int
    row: int | None


class KvPool:
    def __init__(self, ctx: Any, n_ids: int, disk: DiskCache | None,
                 *, min_disk_gain: int = 256,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ctx = ctx
        self._memory = ll.llama_get_memory(ctx)
        self.index = PrefixIndex(n_ids)
        self.disk = disk
        self._min_disk_gain = min_disk_gain
        self._clock = clock
        # entry -> the row of the last decode's logits that follows its tokens; valid until
        # the next decode
        self.live: dict[Entry, int] = {}
        self.saved_bytes = 0
        self.save_seconds = 0.0

    # ---- seating a new sequence ------------------------------------------------------

    def seat(self, prompt: Sequence[int]) -> Seat:
        match = self.index.longest(prompt)
        match = self._from_disk(prompt, match)
        source, shared = match.entry, match.shared
        row = self.live.get(source) if source is not None else None
        if source is None or row is None or not shared == len(prompt) == len(source.tokens):
            row = None
        reuse = len(prompt) if row is not None else min(shared, len(prompt) - 1)
        entry = self._open(keep=source, need=source is None or source.running)
        if entry is None:   # every other id runs: the parked source itself is seated
            assert source is not None
            return self._take_over(source, prompt, reuse, row)
        if source is not None and reuse > 0:
            ll.llama_memory_seq_cp(self._memory, source.seq_id, entry.seq_id, 0, reuse)
            source.last_used = self._clock()
        entry.tokens = list(prompt[:reuse])
        if row is not None:
            self.live[entry] = row
        return Seat(entry, reuse, row)

    def _take_over(self, source: Entry, prompt: Sequence[int], reuse: int,
                   row: int | None) -> Seat:
        """Seat a new sequence on a parked entry's own id, keeping its first ``reuse``
        cells (as a slot reused its own KV): no id is free to copy them into."""
        if not ll.llama_memory_seq_rm(self._memory, source.seq_id, reuse, -1):
            ll.llama_memory_seq_rm(self._memory, source.seq_id, -1, -1)
            reuse, row = 0, None
        if row is None:
            self.live.pop(source, None)
        source.running = True
        source.last_used = self._clock()
        source.tokens = list(prompt[:reuse])
        return Seat(source, reuse, row)

    def _open(self, keep: Entry | None, *, need: bool = True) -> Entry | None:
        """A free id, evicting parked entries but ``keep``; None when only ``keep`` could
        make room (and ``need`` is false: the caller seats on ``keep`` itself)."""
        while (entry := self.index.open(self._clock())) is None:
            if not self.evict(keep=keep):
                if not need:
                    return None
                raise RuntimeError("every sequence id of the KV pool is running")
        return entry

    def _from_disk(self, prompt: Sequence[int], match: Match) -> Match:
        """A saved prefix longer than the pool's best by ``min_disk_gain``, loaded."""
        if self.disk is None:
            return match
        saved, shared = self.disk.longest(prompt)
        if saved is None or shared < match.shared + self._min_disk_gain:
            return match
        if self.index.spare() < 2 and not [e for e in self.index.parked() if e is not match.entry]:
            return match   # no id for it beside the new sequence's
        started = time.perf_counter()
        state = self.disk.read(saved)
        if state is None:
            return match
        entry = self._open(keep=match.entry)
        assert entry is not None   # _open raises rather than give nothing when needed
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        while not ll.llama_state_seq_set_data(self._ctx, buffer, len(state), entry.seq_id):
            if not self.evict(keep=match.entry):   # no room in the pool for it now
                self.drop(entry)
                return match
        entry.tokens = list(saved.tokens)
        for redundant in self.index.park(entry, self._clock()):
            self._forget(redundant)   # their ids are free again: their cells must go too
        log.info("prefix cache: loaded %d tokens from disk in %.2f s", len(entry.tokens),
                 time.perf_counter() - started)
        return Match(entry, shared)

    # ---- sequences ending ----------------------------------------------------------

    def park(self, entry: Entry) -> None:
        """Keep the entry's KV as a cache entry (and on disk, if long and new)."""
        if self.disk is not None and self.disk.worth_saving(entry.tokens):
            self._save(entry)
        for redundant in self.index.park(entry, self._clock()):
            self._forget(redundant)
        if not entry.tokens:
            ll.llama_memory_seq_rm(self._memory, entry.seq_id, -1, -1)

    def drop(self, entry: Entry) -> None:
        """The entry's KV is not worth keeping (a failed decode left it unknown)."""
        self._forget(entry)
        self.index.remove(entry)

    def evict(self, keep: Entry | None = None) -> bool:
        """Drop the least recently used parked entry but ``keep``; False if there is none."""
        candidates = [e for e in self.index.parked() if e is not keep]
        if not candidates:
            return False
        victim = min(candidates, key=lambda e: e.last_used)
        self.drop(victim)
        return True

    def _forget(self, entry: Entry) -> None:
        ll.llama_memory_seq_rm(self._memory, entry.seq_id, -1, -1)
        self.live.pop(entry, None)

    def _save(self, entry: Entry) -> None:
        """Copy the entry's state out (the only part that holds the scheduler) and hand it
        to the disk cache's writer thread."""
        assert self.disk is not None
        started = time.perf_counter()
        size = ll.llama_state_seq_get_size(self._ctx, entry.seq_id)
        state = bytearray(size)
        buffer = (ctypes.c_uint8 * size).from_buffer(state)
        written = ll.llama_state_seq_get_data(self._ctx, buffer, size, entry.seq_id)
        del buffer   # the bytearray may be handed on only once no ctypes view holds it
        if written != size:
            log.warning("prefix cache: could not copy a sequence's state (%d of %d bytes)",
                        written, size)
            return
        self.disk.save(entry.tokens, state)
        took = time.perf_counter() - started
        self.saved_bytes += size
        self.save_seconds += took
        log.info("prefix cache: saving %d tokens (%.0f MB) to disk; the copy took %.3f s",
                 len(entry.tokens), size / 1e6, took)

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()
