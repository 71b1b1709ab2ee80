"""What the embedded engine is told: the model file, its threads, slots and KV, its caches."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..kv_cache import DEFAULT_KV_TYPE
from ..memory_plan import KvBudget
from .devices import Placement


@dataclass
class LlamaCppSettings:
    model_path: str
    n_threads: int = 2
    parallel: int = 8
    batch_tokens: int = 512
    context_window: int | None = None
    kv_type: str = DEFAULT_KV_TYPE
    # llama.cpp's flash attention: "on", "off", or "auto" (contexts.flash_attention)
    flash_attention: str = "auto"
    # the KV of every lane together (memory_plan.py), and the slots that hold a whole
    # window (kv_cache.py); memory_bytes: the memory available (None: read it)
    kv_budget: KvBudget = field(default_factory=KvBudget)
    memory_bytes: int | None = None
    long_slots: int = 2
    # where the layers go: the CPU, or a GPU where the llama.cpp build has one (devices.py)
    placement: Placement = field(default_factory=Placement)
    # a reused prefix shorter than this (a chat template's first tokens) is still read from
    # the KV, but counted as input, not as cached: both APIs report only long cached prefixes
    min_reported_cache: int = 64
    # a running sequence's KV is copied only when it shares this many tokens more than the
    # best free slot (the copy moves the whole stream)
    min_prefix_copy: int = 64
    # long prefixes saved here and reloaded after a restart (None: off)
    disk_cache: Path | None = None
    disk_budget_bytes: int = 4 << 30
    disk_min_tokens: int = 2048
    # a saved prefix is loaded when it covers this many prompt tokens more than a slot does
    disk_min_gain: int = 256
    # draft-free speculative decoding (drafting.py): drafts from the sequence's own n-grams
    # and from recent replies, verified inside the continuous batch
    speculative: bool = True
    # the recent replies' tokens kept for drafts of other requests (0, the default: none
    # shared, so a repeated request computes the same steps as the first: docs/engine.md)
    draft_pool_tokens: int = 0
