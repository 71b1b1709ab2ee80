"""Where sequences sit in the KV: the lane and slot a request gets, the prefix it reuses
(from its slot, a running sequence's slot, or the disk), leaving a slot, and moving a
reply that outgrew its lane."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import llama_cpp as ll

from ..base import Admitted, GenerationRequest
from .disk_cache import DiskCache
from .lanes import Lane, Slot, pick_slot
from .prefill_log import LONG_PREFILL_TOKENS, PrefillLog
from .sequence import Outbox, Sequence
from .settings import LlamaCppSettings

# the engine's one log, whichever of its modules writes
log = logging.getLogger("b3os_infer.engine.llamacpp")


class Seating:
    """The lanes' slots and the disk cache behind them, for the scheduler thread only."""

    def __init__(self, settings: LlamaCppSettings, lanes: list[Lane], disk: DiskCache | None,
                 outbox: Outbox) -> None:
        self.settings = settings
        self.lanes = lanes
        self.disk = disk
        self._outbox = outbox

    @property
    def long_lane(self) -> Lane:
        return self.lanes[-1]

    def lane_for(self, request: GenerationRequest) -> Lane | None:
        """The shortest lane the request fits with room to answer, with a free slot; the
        long lane takes any prompt that fits the window (check_fits saw to that)."""
        prompt = len(request.prompt)
        for lane in self.lanes:
            if (lane.takes(prompt, request.max_tokens) or lane is self.long_lane) \
                    and lane.has_free_slot():
                return lane
        return None

    def seat(self, sequence: Sequence, lane: Lane) -> int | None:
        """Put the sequence in the lane's best free slot, with the longest prefix of its
        prompt to be had; the row to sample from when nothing is to be computed."""
        prompt = sequence.request.prompt
        seat = pick_slot(lane.slots, prompt, self.settings.min_prefix_copy)
        shared = seat.shared
        if seat.source is not None:
            self._copy_slot(lane, seat.source, seat.slot)
        else:
            shared = self._load_saved(lane, seat.slot, prompt, shared)
        return self._seat(sequence, seat.slot, shared)

    def _copy_slot(self, lane: Lane, source: Slot, target: Slot) -> None:
        """Copy a running sequence's KV into a free slot (done at the next decode).

        Each slot has its own KV stream, so llama.cpp copies the whole stream: costly for
        a long window, but far cheaper than computing a long shared prefix again.
        """
        ll.llama_memory_seq_cp(lane.memory, source.index, target.index, -1, -1)
        target.tokens = list(source.tokens)
        lane.live_logits.pop(target.index, None)

    def _load_saved(self, lane: Lane, slot: Slot, prompt: list[int], shared: int) -> int:
        """A saved prefix covering more of the prompt than the slot's ``shared`` tokens,
        loaded into it: how much of the prompt the slot holds afterwards (``shared`` when
        nothing was tried; 0 when a refused state left the slot empty)."""
        if self.disk is None:
            return shared
        saved, covered = self.disk.longest(prompt)
        if saved is None or covered < shared + self.settings.disk_min_gain:
            return shared
        started = time.perf_counter()
        state = self.disk.read(saved)
        if state is None:   # a bad file, deleted: the slot is as it was
            return shared
        if not lane.restore(slot, state, list(saved.tokens)):
            log.warning("prefix cache: llama.cpp refused a saved state; deleting it")
            self.disk.forget(saved)
            return 0
        log.info("prefix cache: loaded %d tokens from disk in %.2f s", len(saved.tokens),
                 time.perf_counter() - started)
        return covered

    def _seat(self, sequence: Sequence, slot: Slot, shared: int) -> int | None:
        """Put the sequence in the slot, keeping the KV of the ``shared`` prefix.

        Returns the row of the last decode's logits to sample from when the slot holds
        exactly this prompt and those logits are still there (the same prompt again, with
        no decode since): nothing is computed then. Otherwise the last prompt token is
        decoded again for its logits, and None is returned."""
        lane = slot.lane
        assert lane is not None
        prompt = sequence.request.prompt
        row = lane.live_logits.get(slot.index)
        if row is not None and not shared == len(prompt) == len(slot.tokens):
            row = None  # the slot's tokens are about to change: its row is stale
            del lane.live_logits[slot.index]
        reuse = len(prompt) if row is not None else min(shared, len(prompt) - 1)
        if not ll.llama_memory_seq_rm(lane.memory, slot.index, reuse, -1):
            lane.forget(slot)
            reuse, row = 0, None
        slot.busy = True
        del slot.tokens[reuse:]
        sequence.slot = slot
        sequence.position = reuse
        # the last prompt token is counted as input even when it was not computed again
        counted = min(reuse, len(prompt) - 1)
        sequence.cached = counted if counted >= self.settings.min_reported_cache else 0
        sequence.feed = list(prompt[reuse:])
        if len(sequence.feed) >= LONG_PREFILL_TOKENS:
            sequence.progress = PrefillLog(f"lane {lane.number} slot {slot.index}",
                                           len(prompt), reuse)
        self._outbox.put(sequence, Admitted(len(prompt), sequence.cached))
        return row

    def vacate(self, sequence: Sequence, *, keep_kv: bool = True) -> None:
        """Free the sequence's slot; its KV stays for the next request that shares the
        prefix (and, when long and new, is saved to disk)."""
        if sequence.slot is None:
            return
        slot, lane = sequence.slot, sequence.lane
        if not keep_kv:
            lane.forget(slot)
        elif self.disk is not None and self.disk.worth_saving(slot.tokens):
            self._save(lane, slot)
        slot.busy = False
        slot.last_used = time.monotonic()
        sequence.slot = None

    def _save(self, lane: Lane, slot: Slot) -> None:
        """Copy the slot's state out (the only part that holds the scheduler) and hand it
        to the disk cache's writer thread."""
        assert self.disk is not None
        started = time.perf_counter()
        state = lane.state_of(slot)
        if state is None:
            log.warning("prefix cache: could not copy a sequence's state")
            return
        self.disk.save(list(slot.tokens), state)
        log.info("prefix cache: saving %d tokens (%.0f MB) to disk; the copy took %.3f s",
                 len(slot.tokens), len(state) / 1e6, time.perf_counter() - started)

    def move_outgrown(self, active: list[Sequence],
                      ends: Callable[[Sequence, str], None]) -> None:
        """Sequences whose lane is full move to a free slot of a longer lane; one that
        cannot move ``ends`` at its lane's window."""
        for sequence in [s for s in active if s.moving]:
            source, lane = sequence.slot, sequence.lane
            assert source is not None
            target_lane = next((other for other in self.lanes
                                if other.window > lane.window and other.has_free_slot()), None)
            if target_lane is None:
                continue   # it waits, its KV kept, until a longer slot is free
            target = min((s for s in target_lane.slots if not s.busy),
                         key=lambda s: s.last_used)
            state = lane.state_of(source)
            if state is None or not target_lane.restore(target, state, list(source.tokens)):
                log.warning("a reply could not move from lane %d to lane %d; it ends at its "
                            "lane's window", lane.number, target_lane.number)
                sequence.moving = False
                ends(sequence, "length")
                continue
            source.busy = False
            source.last_used = time.monotonic()
            target.busy = True
            sequence.slot = target
            sequence.moving = False
            log.info("moved a reply of %d tokens from lane %d to lane %d",
                     len(target.tokens), lane.number, target_lane.number)
