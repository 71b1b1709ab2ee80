"""What is built on the loaded weights: the KV plan, one llama.cpp context per lane, and the
prefix cache on disk."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import llama_cpp as ll

from ..kv_cache import KvPlan, LanePlan, plan_lanes
from .disk_cache import DiskCache, model_identity
from .lanes import Lane
from .model import Model
from .settings import LlamaCppSettings

# the engine's one log, whichever of its modules writes
log = logging.getLogger("b3os_infer.engine.llamacpp")

KV_TYPES = {"f16": ll.GGML_TYPE_F16, "q8_0": ll.GGML_TYPE_Q8_0}
# the longest lane window served without flash attention on the CPU (flash_attention)
UNTILED_UP_TO = 8192


def plan_kv(settings: LlamaCppSettings, model: Model, memory: int, device: str) -> KvPlan:
    """The lanes the KV budget buys for this model on this machine; logged."""
    window = settings.context_window or model.trained_window
    model_bytes = model.file_bytes()
    plan = plan_lanes(window, settings.parallel, settings.long_slots,
                      settings.kv_budget.resolve(model_bytes, memory),
                      model.shape().bytes_per_token(settings.kv_type),
                      settings.kv_budget.short_window_cap)
    log.info("KV plan: %d slot%s, %s (%s; %s, model on %s)", plan.slots,
             "" if plan.slots == 1 else "s", plan.describe(), settings.kv_type,
             settings.kv_budget.describe(model_bytes, memory), device)
    if plan.window < window:
        log.warning("the KV budget holds no whole %d-token window: the model is served "
                    "with %d (raise kv_memory, or set context_window)", window, plan.window)
    return plan


def open_lanes(settings: LlamaCppSettings, model: Model, plan: KvPlan,
               device: str) -> list[Lane]:
    """A context for each lane of the plan, shortest window first."""
    lanes = []
    for number, lane in enumerate(plan.lanes):
        flash = flash_attention(settings, lane.window, device)
        ctx = new_context(settings, model, lane, plan.window, flash)
        lanes.append(Lane(number, ctx, lane, settings.batch_tokens, flash))
    return lanes


def flash_attention(settings: LlamaCppSettings, window: int, device: str) -> bool:
    """Whether a lane of this window computes attention with llama.cpp's flash attention.

    ``"auto"``: yes on a GPU, with a quantized V (which needs it) and on a lane of more
    than ``UNTILED_UP_TO`` tokens; no on the CPU's shorter lanes. On the CPU it is the
    faster prefill (its tiled kernel) but the slower decode and the slower short draft
    (fewer than 64 rows of a sequence go through it one at a time): docs/engine.md has
    the figures. A long lane is where a cold agent prompt is prefilled; a short one
    mostly decodes."""
    if settings.flash_attention != "auto":
        return settings.flash_attention == "on"
    return device != "cpu" or settings.kv_type != "f16" or window > UNTILED_UP_TO


def new_context(settings: LlamaCppSettings, model: Model, lane: LanePlan, window: int,
                flash: bool) -> Any:
    """One KV stream per slot of the lane, each holding the lane's window.

    Separate streams keep each sequence's attention to its own cells, laid out by its
    own history, and measured faster here than one unified pool.
    """
    trained = model.trained_window
    params = ll.llama_context_default_params()
    params.n_ctx = lane.window * lane.slots
    params.n_batch = settings.batch_tokens + lane.slots
    params.n_ubatch = settings.batch_tokens + lane.slots
    params.n_seq_max = lane.slots
    params.n_threads = settings.n_threads
    params.n_threads_batch = settings.n_threads
    params.kv_unified = False
    if window > trained:  # stretch the rotary positions with YaRN
        params.rope_scaling_type = ll.LLAMA_ROPE_SCALING_TYPE_YARN
        params.rope_freq_scale = trained / window
        params.yarn_orig_ctx = trained
    params.type_k = params.type_v = KV_TYPES[settings.kv_type]
    params.flash_attn_type = (ll.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash
                              else ll.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    params.no_perf = True
    ctx = ll.llama_init_from_model(model.handle, params)
    if not ctx:
        raise RuntimeError("llama.cpp could not create a context")
    return ctx


def open_disk_cache(settings: LlamaCppSettings, window: int, trained: int) -> DiskCache | None:
    """The prefix cache on disk for this model and KV layout (None: configured off)."""
    if settings.disk_cache is None or settings.disk_budget_bytes <= 0:
        return None
    identity = {**model_identity(Path(settings.model_path)), "kv_type": settings.kv_type,
                "window": window, "trained_window": trained,
                "llama_cpp": getattr(ll, "__version__", "?")}
    return DiskCache(settings.disk_cache, identity, settings.disk_budget_bytes,
                     settings.disk_min_tokens)
