"""KV memory: the precisions llama.cpp keeps it in, what a token costs, and the lanes a
memory budget buys.

f16 is the default because llama.cpp's CPU flash attention has its fast paths (tiled
prefill, split-KV decode) only when K and V are f16 or f32; a q8_0 cache halves the memory
but computes a long prompt about 2-3 times slower (docs/engine.md has the measurements).

A llama.cpp context gives every sequence slot a KV stream of the same length, allocated
once. Full windows for every slot would cost ``parallel x window`` tokens, most of them
never used: short requests are the many, long ones (agents) the few. So the budget is
split into two lanes, two contexts on the same weights: a *long* lane of ``long_slots``
slots holding the whole context window, and a *short* lane of ``parallel`` slots sharing
what is left. A request goes to the short lane when it fits there with room to answer;
a reply that outgrows it moves to the long lane. When the budget holds full windows for
every slot, there is a single lane; a budget too small for the long lane keeps the window
before the slots (plan_lanes says how).
"""

from __future__ import annotations

from dataclasses import dataclass

KV_TYPES = ("f16", "q8_0")
DEFAULT_KV_TYPE = "f16"
# bytes per cached element: f16 is two; q8_0 packs 32 values in 34 bytes
_ELEMENT_BYTES = {"f16": 2.0, "q8_0": 34 / 32}
# the short lane's window is a multiple of this (llama.cpp pads its KV views to 256 cells)
LANE_GRANULARITY = 256
# a short lane smaller than this is not worth having: the budget is too small
MIN_SHORT_WINDOW = 2048


@dataclass(frozen=True)
class ModelShape:
    """What sizes a model's KV: layers, and K and V widths per token (all KV heads)."""

    layers: int
    k_width: int
    v_width: int

    def bytes_per_token(self, kv_type: str) -> int:
        per_layer = (self.k_width + self.v_width) * _ELEMENT_BYTES[kv_type]
        return int(self.layers * per_layer)


@dataclass(frozen=True)
class LanePlan:
    slots: int
    window: int

    def tokens(self) -> int:
        return self.slots * self.window


@dataclass(frozen=True)
class KvPlan:
    lanes: tuple[LanePlan, ...]   # shortest window first; the last holds the whole window
    bytes_per_token: int

    @property
    def window(self) -> int:
        """The window served: the longest lane's."""
        return self.lanes[-1].window

    @property
    def slots(self) -> int:
        return sum(lane.slots for lane in self.lanes)

    def bytes(self) -> int:
        return sum(lane.tokens() for lane in self.lanes) * self.bytes_per_token

    def describe(self) -> str:
        lanes = " + ".join(f"{lane.slots} x {lane.window:,}" for lane in self.lanes)
        return f"{lanes} tokens, {self.bytes() / 2**20:,.0f} MiB of KV"


class KvBudgetTooSmall(ValueError):
    """The budget cannot hold one slot of a useful window."""


def plan_lanes(window: int, parallel: int, long_slots: int, budget_bytes: int,
               bytes_per_token: int, short_cap: int | None = None) -> KvPlan:
    """The lanes for ``parallel`` short slots and ``long_slots`` of the whole ``window``
    within ``budget_bytes`` of KV, never more than every slot's whole window, nor, with
    ``short_cap``, more than the long slots' whole windows and short slots of that many
    tokens.

    A budget too small for all of that keeps the window before the slots: fewer short
    slots (each at least 2,048 tokens), then fewer long ones, then, when even one whole
    window does not fit, one slot of a shorter window.
    """
    tokens = budget_bytes // bytes_per_token
    if short_cap is not None and long_slots and short_cap < window:
        tokens = min(tokens, long_slots * window + parallel * short_cap)
    whole = tokens // window
    if whole >= parallel:
        return KvPlan((LanePlan(parallel, window),), bytes_per_token)
    if whole == 0:
        return _shorter_window(tokens, window, bytes_per_token)
    if long_slots == 0:
        return KvPlan((LanePlan(whole, window),), bytes_per_token)
    long = LanePlan(min(long_slots, whole), window)
    rest = tokens - long.tokens()
    floor = min(MIN_SHORT_WINDOW, window)
    short_slots = min(parallel, rest // floor)
    short = min(rest // max(short_slots, 1) // LANE_GRANULARITY * LANE_GRANULARITY, window)
    if short_slots == 0 or short < floor:
        return KvPlan((long,), bytes_per_token)
    return KvPlan((LanePlan(short_slots, short), long), bytes_per_token)


def _shorter_window(tokens: int, window: int, bytes_per_token: int) -> KvPlan:
    """One slot of the longest window the budget holds, if that is still useful."""
    shorter = tokens // LANE_GRANULARITY * LANE_GRANULARITY
    if shorter < MIN_SHORT_WINDOW:
        need = -(-MIN_SHORT_WINDOW * bytes_per_token // 2**20)
        raise KvBudgetTooSmall(
            f"a KV budget of {tokens * bytes_per_token / 2**20:,.0f} MiB cannot hold one "
            f"slot of {MIN_SHORT_WINDOW:,} tokens ({bytes_per_token:,} bytes of KV per "
            f"token; the model's window is {window:,}): it needs at least {need:,} MiB; "
            "raise kv_memory or kv_memory_mib")
    return KvPlan((LanePlan(1, shorter),), bytes_per_token)
