"""The precisions llama.cpp can keep its KV cache in, and ours by default."""

from __future__ import annotations

KV_TYPES = ("f16", "q8_0")
# half the memory of f16 (it needs flash attention, which llama.cpp then turns on)
DEFAULT_KV_TYPE = "q8_0"
