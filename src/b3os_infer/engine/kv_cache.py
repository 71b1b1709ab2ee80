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
every slot, there is a single lane.
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

    def bytes(self) -> int:
        return sum(lane.tokens() for lane in self.lanes) * self.bytes_per_token

    def describe(self) -> str:
        lanes = " + ".join(f"{lane.slots} x {lane.window:,}" for lane in self.lanes)
        return f"{lanes} tokens, {self.bytes() / 2**20:,.0f} MiB of KV"


class KvBudgetTooSmall(ValueError):
    """The budget cannot hold the long lane plus a useful short one."""


def plan_lanes(window: int, parallel: int, long_slots: int, budget_bytes: int,
               bytes_per_token: int) -> KvPlan:
    """The lanes for ``parallel`` short slots and ``long_slots`` of the whole ``window``
    within ``budget_bytes`` of KV."""
    if parallel * window * bytes_per_token <= budget_bytes:
        return KvPlan((LanePlan(parallel, window),), bytes_per_token)
    rest = budget_bytes - long_slots * window * bytes_per_token
    short = rest // (parallel * bytes_per_token) // LANE_GRANULARITY * LANE_GRANULARITY
    if long_slots == 0 or short < min(MIN_SHORT_WINDOW, window):
        raise KvBudgetTooSmall(_too_small(window, parallel, long_slots, budget_bytes,
                                          bytes_per_token))
    return KvPlan((LanePlan(parallel, short), LanePlan(long_slots, window)), bytes_per_token)


def _too_small(window: int, parallel: int, long_slots: int, budget: int, per_token: int
               ) -> str:
    short = min(MIN_SHORT_WINDOW, window) if long_slots else window
    need = (long_slots * window + parallel * short) * per_token
    return (f"kv_memory_mib = {budget / 2**20:,.0f} cannot hold {long_slots} slot(s) of the "
            f"{window:,}-token window and {parallel} shorter ones ({per_token:,} bytes of KV "
            f"per token): it needs at least {-(-need // 2**20):,} MiB; raise kv_memory_mib, "
            "or lower long_slots, parallel or the model's context_window")
