"""The precisions llama.cpp can keep its KV cache in, ours by default, and the pool's size."""

from __future__ import annotations

KV_TYPES = ("f16", "q8_0")
# f16 prefills about twice as fast as q8_0 on CPUs (q8_0 needs flash attention over a
# quantized cache); the unified pool makes its memory affordable
DEFAULT_KV_TYPE = "f16"
# tokens of KV shared by every running sequence and cached prefix: two full windows of
# 32,768 (SmolLM2-135M: 1.5 GB in f16; Qwen2.5-Coder-0.5B: 0.8 GB)
DEFAULT_POOL_TOKENS = 65536
