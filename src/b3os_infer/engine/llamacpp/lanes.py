"""Lanes and slots of the embedded engine: where each sequence's KV lives.

A lane is one llama.cpp context on the shared weights, with a fixed number of slots; each
slot is a sequence id with a KV stream of its own (``kv_unified = False``), so a
sequence's attention only ever reads its own cells, laid out by its own history (f16's
kernels still differ between one decoding sequence and several: docs/engine.md). A free
slot keeps the tokens it last computed: that is the prefix cache (engine/kv_cache.py says
how a memory budget becomes lanes). Only the scheduler thread touches these.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as ll

from ..kv_cache import LanePlan
from .prefix import Tokens, common_prefix, token_array
from .seq_state import restream
from .v_layout import relayout

# a reply is given at least this much room (or its max_tokens, if less) when a lane is chosen
ANSWER_ROOM = 1024


@dataclass(eq=False)
class Slot:
    """A sequence id with its own KV stream in a lane, and the tokens that stream holds."""

    index: int
    tokens: list[int] = field(default_factory=list)
    busy: bool = False
    last_used: float = 0.0
    lane: Lane | None = None

    def common_prefix(self, prompt: Tokens) -> int:
        return common_prefix(self.tokens, prompt)


@dataclass(frozen=True)
class Seat:
    """Where a new sequence goes: a free slot, how much of its prompt is already in KV,
    and the busy slot to copy that KV from (None: the free slot holds it itself)."""

    slot: Slot
    shared: int
    source: Slot | None = None


def pick_slot(slots: list[Slot], prompt: list[int], min_copy: int) -> Seat:
    """The free slot sharing the longest prefix (among equals, the least recently used).

    When a running sequence shares a prefix longer by at least ``min_copy`` tokens, its
    KV is copied instead, into the least recently used free slot: that slot's own cache
    is the one worth least.
    """
    free = [slot for slot in slots if not slot.busy]
    wanted = token_array(prompt)   # converted once, compared with every slot
    scored = [(slot.common_prefix(wanted), -slot.last_used, slot) for slot in free]
    shared, _, slot = max(scored, key=lambda item: item[:2])
    running = [(other.common_prefix(wanted), other) for other in slots if other.busy]
    if running:
        longest, source = max(running, key=lambda item: item[0])
        if longest >= shared + min_copy:
            oldest = min(free, key=lambda other: other.last_used)
            return Seat(oldest, longest, source)
    return Seat(slot, shared)


class Lane:
    """One llama.cpp context: ``plan.slots`` slots of ``plan.window`` tokens each."""

    def __init__(self, number: int, ctx: Any, plan: LanePlan, batch_tokens: int,
                 flash_attention: bool) -> None:
        self.number = number
        self.ctx = ctx
        # with it V is a row per cell, without it transposed (v_layout.py); and only with
        # it does a drafted step cost less a row from 64 rows of a sequence (steps.py)
        self.flash_attention = flash_attention
        self.memory = ll.llama_get_memory(ctx)
        self.window = plan.window
        self.batch_tokens = batch_tokens
        self.batch = ll.llama_batch_init(batch_tokens + plan.slots, 0, 1)
        self.slots = [Slot(index, lane=self) for index in range(plan.slots)]
        # slot index -> the row of the last decode's logits that follows the slot's tokens;
        # valid until the next decode or until the slot's tokens change
        self.live_logits: dict[int, int] = {}

    def has_free_slot(self) -> bool:
        return any(not slot.busy for slot in self.slots)

    def takes(self, prompt_tokens: int, max_tokens: int) -> bool:
        """Whether a request fits with room to answer (all of it, up to ANSWER_ROOM)."""
        return prompt_tokens + min(max_tokens, ANSWER_ROOM) <= self.window

    def tokens_held(self) -> int:
        return sum(len(slot.tokens) for slot in self.slots)

    def forget(self, slot: Slot) -> None:
        """Drop everything the slot holds."""
        ll.llama_memory_seq_rm(self.memory, slot.index, -1, -1)
        slot.tokens.clear()
        self.live_logits.pop(slot.index, None)

    def state_of(self, slot: Slot) -> bytearray | None:
        """A copy of the slot's KV state (llama.cpp's sequence state format)."""
        size = ll.llama_state_seq_get_size(self.ctx, slot.index)
        state = bytearray(size)
        buffer = (ctypes.c_uint8 * size).from_buffer(state)
        written = ll.llama_state_seq_get_data(self.ctx, buffer, size, slot.index)
        del buffer   # the bytearray may be handed on only once no ctypes view holds it
        return state if written == size else None

    def restore(self, slot: Slot, saved: bytearray, tokens: list[int]) -> bool:
        """Put a saved state (of this lane or another) into the free slot; False, and the
        slot empty, if it does not fit or llama.cpp refuses it."""
        self.forget(slot)
        if len(tokens) > self.window:   # before any copy of a state of hundreds of MB
            return False
        state = restream(saved, len(self.slots))
        if state is None:
            return False
        # one it cannot read goes to llama.cpp as it is
        state = relayout(state, transposed=not self.flash_attention) or state
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state)
        loaded = ll.llama_state_seq_set_data(self.ctx, buffer, len(state), slot.index)
        del buffer
        if not loaded:
            self.forget(slot)
            return False
        slot.tokens = list(tokens)
        return True

    def close(self) -> None:
        ll.llama_batch_free(self.batch)
        ll.llama_free(self.ctx)
