"""The embedded engine: llama.cpp in process, through llama-cpp-python's low-level API.

One scheduler thread owns the llama contexts, one per lane (engine/lanes.py): each step it
admits waiting requests into free slots, and for each lane builds one ``llama_batch``
holding the next token of every decoding sequence plus a chunk of pending prompt tokens,
decodes it, and samples each sequence from its own sampler chain. A request goes to the
shortest lane it fits with room to answer; a reply that outgrows its lane moves on to the
long one (its KV copied across). A finished or cancelled sequence leaves its KV in its slot
(a cancelled prefill keeps what it computed): the next request is seated in the free slot
that shares the longest prefix with its prompt, and only the rest is dropped
(``llama_memory_seq_rm``) and computed. When a running sequence shares a much longer
prefix, its KV is copied into the least recently used free slot instead. Long prefixes are
also written to disk (engine/disk_cache.py) and reloaded from there into any slot they fit,
after a restart too. The event loop only ever waits on queues.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import queue
import threading
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp as ll
import numpy as np

from ..errors import InternalError, InvalidRequest
from .base import (
    Admitted,
    EngineEvent,
    EngineInfo,
    GenerationDone,
    GenerationRequest,
    KvUsage,
    TokenEvent,
    check_fits,
)
from .devices import Placement, device_name, gpu_backend, gpu_offload, model_params
from .disk_cache import DiskCache, model_identity
from .drafting import DraftControl, NgramIndex, SharedPool, draft_for
from .gguf import (
    display_name,
    model_metadata,
    quiet_llama,
    vocab_piece,
    vocab_text,
    vocab_tokenize,
)
from .kv_cache import DEFAULT_KV_TYPE, KvPlan, LanePlan, ModelShape, plan_lanes
from .lanes import Lane, Slot, pick_slot
from .load_progress import LoadProgress
from .memory_plan import KvBudget, available_memory
from .prefill_log import LONG_PREFILL_TOKENS, PrefillLog
from .reasoning import ReasoningTracker
from .samplers import sampler_chain

log = logging.getLogger(__name__)


def _failed(exc: Exception) -> InternalError:
    return InternalError("the engine failed while generating", detail=repr(exc))

_SCHEDULER_STACK_BYTES = 512 * 1024 * 1024
_KV_TYPES = {"f16": ll.GGML_TYPE_F16, "q8_0": ll.GGML_TYPE_Q8_0}


@dataclass
class LlamaCppSettings:
    model_path: str
    n_threads: int = 2
    parallel: int = 8
    batch_tokens: int = 512
    context_window: int | None = None
    kv_type: str = DEFAULT_KV_TYPE
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
    # draft-free speculative decoding (engine/drafting.py): drafts from the sequence's own
    # n-grams and from recent replies, verified inside the continuous batch
    speculative: bool = True
    # the recent replies' tokens kept for drafts of other requests (0, the default: none
    # shared, so a repeated request computes the same steps as the first: docs/engine.md)
    draft_pool_tokens: int = 0


@dataclass(eq=False)
class _Sequence:
    request: GenerationRequest
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue[EngineEvent | BaseException]
    cancelled: bool = False
    slot: Slot | None = None
    sampler: Any = None
    position: int = 0
    feed: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    reasoning: ReasoningTracker | None = None
    logprobs: tuple[float, tuple[tuple[int, float], ...]] | None = None
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))
    progress: PrefillLog | None = None
    # its lane's window is full: it waits for a slot in a longer lane
    moving: bool = False
    # speculative decoding: its tokens so far, how much it drafts, the draft in this step
    history: NgramIndex | None = None
    drafts: DraftControl = field(default_factory=DraftControl)
    draft: list[int] = field(default_factory=list)
    reply: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.request.reasoning is not None:
            self.reasoning = ReasoningTracker(self.request.reasoning)

    @property
    def lane(self) -> Lane:
        assert self.slot is not None and self.slot.lane is not None
        return self.slot.lane


class _Outbox:
    """Events of one step, handed to each event loop in a single wake-up.

    With two cores, waking the loop once per token per sequence steals enough CPU from
    llama.cpp's threads to cancel out what batching gains.
    """

    def __init__(self) -> None:
        self._events: dict[asyncio.AbstractEventLoop, list[tuple[_Sequence, Any]]] = {}

    def put(self, sequence: _Sequence, event: EngineEvent | BaseException) -> None:
        self._events.setdefault(sequence.loop, []).append((sequence, event))

    def flush(self) -> None:
        for loop, events in self._events.items():
            try:
                loop.call_soon_threadsafe(_deliver, events)
            except RuntimeError:  # that loop is closed: nobody is listening any more
                pass
        self._events = {}


def _deliver(events: list[tuple[_Sequence, Any]]) -> None:
    for sequence, event in events:
        sequence.out.put_nowait(event)


def model_shape(model: Any) -> ModelShape:
    """Layers and K/V widths of a loaded model, for sizing its KV."""
    def number(key: str) -> int | None:
        arch = model_metadata(model, "general.architecture")
        value = model_metadata(model, f"{arch}.{key}") if arch else None
        return int(value) if value and value.isdigit() else None

    heads = ll.llama_model_n_head(model)
    kv_heads = ll.llama_model_n_head_kv(model) or heads
    head_width = ll.llama_model_n_embd(model) // max(heads, 1)
    k = number("attention.key_length") or head_width
    v = number("attention.value_length") or head_width
    return ModelShape(ll.llama_model_n_layer(model), k * kv_heads, v * kv_heads)


class LlamaCppEngine:
    """Continuous batching over llama.cpp contexts (lanes), one KV stream per slot."""

    def __init__(self, settings: LlamaCppSettings) -> None:
        self.settings = settings
        if settings.kv_type not in _KV_TYPES:
            raise ValueError(f"kv_type must be one of {', '.join(_KV_TYPES)}")
        quiet_llama()
        # read before the weights are loaded, which the budget then takes off
        self._memory = settings.memory_bytes or available_memory()
        offload = gpu_offload()
        self.device = device_name(settings.placement, offload, gpu_backend())
        if settings.placement.gpu_layers and not offload:
            log.warning("gpu_layers = %d, but this llama.cpp build has no GPU backend: the "
                        "model runs on the CPU (make install LLAMA_BACKEND=cuda|metal|vulkan)",
                        settings.placement.gpu_layers)
        self._model_params = model_params(settings.placement, offload)
        progress = LoadProgress(Path(settings.model_path).name)
        progress.attach(self._model_params.params)
        self._model = ll.llama_model_load_from_file(settings.model_path.encode(),
                                                    self._model_params.params)
        if not self._model:
            raise RuntimeError(f"llama.cpp could not load {settings.model_path}")
        self._vocab = ll.llama_model_get_vocab(self._model)
        trained = ll.llama_model_n_ctx_train(self._model)
        self.trained_window = trained
        self.plan: KvPlan = self._plan(settings.context_window or trained)
        window = self.plan.window
        self._lanes = [Lane(number, self._new_context(lane, window, trained), lane,
                            settings.batch_tokens)
                       for number, lane in enumerate(self.plan.lanes)]
        self._disk = self._disk_cache(window, trained)
        self.info = EngineInfo(
            context_window=window,
            vocab_size=ll.llama_vocab_n_tokens(self._vocab),
            description=f"llama.cpp on {self.device}, {settings.n_threads} threads, "
                        f"{self.plan.describe()} ({settings.kv_type})",
            applies_grammars=True,
            slots=self.plan.slots,
            device=self.device,
        )
        self._inbox: queue.Queue[_Sequence | None] = queue.Queue()
        self._waiting: list[_Sequence] = []
        self._active: list[_Sequence] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._outbox = _Outbox()
        self._last_text = ""
        self._pool = SharedPool(settings.draft_pool_tokens) if settings.speculative else None
        self.drafted_tokens = 0    # since start, for /metrics
        self.accepted_tokens = 0

    def _plan(self, window: int) -> KvPlan:
        """The lanes the KV budget buys for this model on this machine; logged."""
        settings = self.settings
        model_bytes = Path(settings.model_path).stat().st_size
        memory = self._memory
        plan = plan_lanes(window, settings.parallel, settings.long_slots,
                          settings.kv_budget.resolve(model_bytes, memory),
                          model_shape(self._model).bytes_per_token(settings.kv_type),
                          settings.kv_budget.short_window_cap)
        log.info("KV plan: %d slot%s, %s (%s; %s, model on %s)", plan.slots,
                 "" if plan.slots == 1 else "s", plan.describe(), settings.kv_type,
                 settings.kv_budget.describe(model_bytes, memory), self.device)
        if plan.window < window:
            log.warning("the KV budget holds no whole %d-token window: the model is served "
                        "with %d (raise kv_memory, or set context_window)", window, plan.window)
        return plan

    def _new_context(self, lane: LanePlan, window: int, trained: int) -> Any:
        """One KV stream per slot of the lane, each holding the lane's window.

        Separate streams keep each sequence's attention to its own cells, laid out by its
        own history, and measured faster here than one unified pool.
        """
        params = ll.llama_context_default_params()
        params.n_ctx = lane.window * lane.slots
        params.n_batch = self.settings.batch_tokens + lane.slots
        params.n_ubatch = self.settings.batch_tokens + lane.slots
        params.n_seq_max = lane.slots
        params.n_threads = self.settings.n_threads
        params.n_threads_batch = self.settings.n_threads
        params.kv_unified = False
        if window > trained:  # stretch the rotary positions with YaRN
            params.rope_scaling_type = ll.LLAMA_ROPE_SCALING_TYPE_YARN
            params.rope_freq_scale = trained / window
            params.yarn_orig_ctx = trained
        params.type_k = params.type_v = _KV_TYPES[self.settings.kv_type]
        # flash attention: a quantized V cache needs it, and f16 has its fast paths in it
        params.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_ENABLED
        params.no_perf = True
        ctx = ll.llama_init_from_model(self._model, params)
        if not ctx:
            raise RuntimeError("llama.cpp could not create a context")
        return ctx

    def _disk_cache(self, window: int, trained: int) -> DiskCache | None:
        settings = self.settings
        if settings.disk_cache is None or settings.disk_budget_bytes <= 0:
            return None
        identity = {**model_identity(Path(settings.model_path)), "kv_type": settings.kv_type,
                    "window": window, "trained_window": trained,
                    "llama_cpp": getattr(ll, "__version__", "?")}
        return DiskCache(settings.disk_cache, identity, settings.disk_budget_bytes,
                         settings.disk_min_tokens)

    @property
    def kv_bytes(self) -> int:
        """The KV memory its lanes reserve."""
        return self.plan.bytes()

    @property
    def _long_lane(self) -> Lane:
        return self._lanes[-1]

    # ---- metadata and tokens -------------------------------------------------

    def metadata(self, key: str) -> str | None:
        return model_metadata(self._model, key)

    def display_name(self) -> str:
        return display_name(self._model, Path(self.settings.model_path))

    def token_text(self, token: int) -> str:
        return vocab_text(self._vocab, token)

    @property
    def bos_token_id(self) -> int:
        return int(ll.llama_vocab_bos(self._vocab))

    @property
    def eos_token_id(self) -> int:
        return int(ll.llama_vocab_eos(self._vocab))

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return vocab_tokenize(self._vocab, text, add_special)

    def token_bytes(self, token: int) -> bytes:
        return vocab_piece(self._vocab, token, special=False)

    # ---- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        if self._thread is None:
            # llama.cpp's grammar engine recurses deeply on large tool sets (Claude Code sends
            # dozens of tools); the default thread stack overflows on them
            previous = threading.stack_size(_SCHEDULER_STACK_BYTES)
            try:
                self._thread = threading.Thread(target=self._run, name="llamacpp-scheduler",
                                                daemon=True)
                self._thread.start()
            finally:
                threading.stack_size(previous)

    async def close(self) -> None:
        self._stopping = True
        self._inbox.put(None)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        if self._disk is not None:
            await asyncio.to_thread(self._disk.close)   # the writes queued so far
        for lane in self._lanes:
            lane.close()
        ll.llama_model_free(self._model)

    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def load(self) -> dict[str, int]:
        return {"active": len(self._active), "waiting": len(self._waiting) + self._inbox.qsize()}

    def kv_usage(self) -> KvUsage:
        """Tokens the slots hold in KV, of all lanes' cells; read from the slots' token
        lists, which the scheduler thread keeps."""
        used = sum(lane.tokens_held() for lane in self._lanes)
        return KvUsage(used, sum(lane.tokens() for lane in self.plan.lanes))

    def cache_stats(self) -> dict[str, int]:
        """Prompt tokens still to compute, and the prefixes saved on disk."""
        left = sum(len(s.feed) for s in self._active if len(s.feed) > 1)
        return {"prefill_left": left,
                "disk_files": len(self._disk.entries()) if self._disk is not None else 0}

    # ---- the async side ----------------------------------------------------------

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]:
        check_fits(request, self.info.context_window)
        if not self.healthy():
            raise InternalError("the engine is not running")
        sequence = _Sequence(request, asyncio.get_running_loop(), asyncio.Queue())
        self._inbox.put(sequence)
        try:
            while True:
                event = await sequence.out.get()
                if isinstance(event, BaseException):
                    raise event
                yield event
                if isinstance(event, GenerationDone):
                    return
        finally:
            sequence.cancelled = True

    # ---- the scheduler thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping:
            self._drain_inbox(block=not self._active and not self._waiting)
            self._reap_cancelled()
            self._move_outgrown()
            self._admit()
            for lane in self._lanes:
                members = [s for s in self._active if s.lane is lane and not s.moving]
                if not members:
                    continue
                try:
                    self._step(lane, members)
                except Exception as exc:  # a failed decode fails the sequences in it
                    log.exception("decode step failed")
                    for sequence in members:
                        self._outbox.put(sequence, _failed(exc))
                        self._release(sequence, keep_kv=False)
            self._outbox.flush()  # admission alone may have answered (or refused) some
        for sequence in self._active + self._waiting:
            self._outbox.put(sequence, InternalError("the engine is shutting down"))
            self._release(sequence)
        self._outbox.flush()

    def _drain_inbox(self, *, block: bool) -> None:
        try:
            item = self._inbox.get(timeout=0.5) if block else self._inbox.get_nowait()
        except queue.Empty:
            return
        while True:
            if item is not None:
                self._waiting.append(item)
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _reap_cancelled(self) -> None:
        self._waiting = [s for s in self._waiting if not s.cancelled]
        for sequence in [s for s in self._active if s.cancelled]:
            self._release(sequence)

    def _lane_for(self, request: GenerationRequest) -> Lane | None:
        """The shortest lane the request fits with room to answer, with a free slot; the
        long lane takes any prompt that fits the window (check_fits saw to that)."""
        prompt = len(request.prompt)
        for lane in self._lanes:
            if (lane.takes(prompt, request.max_tokens) or lane is self._long_lane) \
                    and lane.has_free_slot():
                return lane
        return None

    def _admit(self) -> None:
        still: list[_Sequence] = []
        for candidate in self._waiting:
            lane = self._lane_for(candidate.request)
            if lane is None:
                still.append(candidate)
                continue
            try:
                candidate.sampler = sampler_chain(self._vocab, candidate.request)
            except ValueError as exc:
                self._outbox.put(candidate, InvalidRequest(str(exc)))
                continue
            except Exception as exc:  # never let one request stop the scheduler
                log.exception("building a sampler failed")
                self._outbox.put(candidate, _failed(exc))
                continue
            prompt = candidate.request.prompt
            seat = pick_slot(lane.slots, prompt, self.settings.min_prefix_copy)
            shared = seat.shared
            if seat.source is not None:
                self._copy_slot(lane, seat.source, seat.slot)
            else:
                shared = self._load_saved(lane, seat.slot, prompt, shared)
            row = self._seat(candidate, seat.slot, shared)
            self._active.append(candidate)
            if row is not None:  # its whole prompt is in KV, its next logits still here
                self._sample(candidate, row)
        self._waiting = still

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
        if self._disk is None:
            return shared
        saved, covered = self._disk.longest(prompt)
        if saved is None or covered < shared + self.settings.disk_min_gain:
            return shared
        started = time.perf_counter()
        state = self._disk.read(saved)
        if state is None:   # a bad file, deleted: the slot is as it was
            return shared
        if not lane.restore(slot, state, list(saved.tokens)):
            log.warning("prefix cache: llama.cpp refused a saved state; deleting it")
            self._disk.forget(saved)
            return 0
        log.info("prefix cache: loaded %d tokens from disk in %.2f s", len(saved.tokens),
                 time.perf_counter() - started)
        return covered

    def _seat(self, sequence: _Sequence, slot: Slot, shared: int) -> int | None:
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

    def _release(self, sequence: _Sequence, *, keep_kv: bool = True) -> None:
        """Free the slot; its KV stays for the next request that shares the prefix (and,
        when long and new, is saved to disk)."""
        if sequence in self._active:
            self._active.remove(sequence)
        if sequence.progress is not None:
            sequence.progress.finish(cancelled=True)
            sequence.progress = None
        if sequence.slot is not None:
            slot, lane = sequence.slot, sequence.lane
            if not keep_kv:
                lane.forget(slot)
            elif self._disk is not None and self._disk.worth_saving(slot.tokens):
                self._save(lane, slot)
            slot.busy = False
            slot.last_used = time.monotonic()
            sequence.slot = None
        if sequence.sampler is not None:
            sequence.sampler.free()
            sequence.sampler = None
        if self._pool is not None and sequence.reply:
            self._pool.add(sequence.reply)
            sequence.reply = []

    def _save(self, lane: Lane, slot: Slot) -> None:
        """Copy the slot's state out (the only part that holds the scheduler) and hand it
        to the disk cache's writer thread."""
        assert self._disk is not None
        started = time.perf_counter()
        state = lane.state_of(slot)
        if state is None:
            log.warning("prefix cache: could not copy a sequence's state")
            return
        self._disk.save(list(slot.tokens), state)
        log.info("prefix cache: saving %d tokens (%.0f MB) to disk; the copy took %.3f s",
                 len(slot.tokens), len(state) / 1e6, time.perf_counter() - started)

    def _move_outgrown(self) -> None:
        """Sequences whose lane is full move to a free slot of a longer lane."""
        for sequence in [s for s in self._active if s.moving]:
            source, lane = sequence.slot, sequence.lane
            assert source is not None
            target_lane = next((other for other in self._lanes
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
                self._finish(sequence, "length")
                continue
            source.busy = False
            source.last_used = time.monotonic()
            target.busy = True
            sequence.slot = target
            sequence.moving = False
            log.info("moved a reply of %d tokens from lane %d to lane %d",
                     len(target.tokens), lane.number, target_lane.number)

    def _step(self, lane: Lane, members: list[_Sequence]) -> None:
        """One decode in a lane: every sequence's next token (with its draft), then prompt
        chunks in what is left."""
        outputs: list[tuple[_Sequence, int]] = []
        n, budget = self._put_decoding(lane, members, outputs)
        n = self._put_prompts(lane, members, n, budget, outputs)
        lane.batch.n_tokens = n
        lane.live_logits = {}
        status = ll.llama_decode(lane.ctx, lane.batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")
        lane.live_logits = {sequence.slot.index: index for sequence, index in outputs
                            if sequence.slot is not None}
        for sequence, index in outputs:
            if sequence.draft:
                self._verify(sequence, index)
            else:
                self._sample(sequence, index)

    def _put_decoding(self, lane: Lane, members: list[_Sequence],
                      outputs: list[tuple[_Sequence, int]]) -> tuple[int, int]:
        """Each decoding sequence's one token and its draft into the batch; the drafts
        come out of the step's token budget. Returns the rows used and the budget left."""
        n = 0
        budget = lane.batch_tokens
        for sequence in members:
            if len(sequence.feed) == 1:
                sequence.draft = self._draft(sequence, budget)
                budget -= len(sequence.draft)
                n = self._put(lane, n, sequence, 1)
                outputs.append((sequence, n - 1 - len(sequence.draft)))
        return n, budget

    def _put_prompts(self, lane: Lane, members: list[_Sequence], n: int, budget: int,
                     outputs: list[tuple[_Sequence, int]]) -> int:
        """Prompt chunks into what is left of the batch; a prompt that ends here samples."""
        for sequence in members:
            if budget <= 0 or len(sequence.feed) <= 1:
                continue
            take = min(budget, len(sequence.feed))
            n = self._put(lane, n, sequence, take)
            budget -= take
            if sequence.progress is not None:
                sequence.progress.advance(take)
            if not sequence.feed:
                outputs.append((sequence, n - 1))
                if sequence.progress is not None:
                    sequence.progress.finish()
                    sequence.progress = None
        return n

    def _put(self, lane: Lane, n: int, sequence: _Sequence, count: int) -> int:
        """Move ``count`` tokens from the sequence's feed into the lane's batch (with the
        last of its feed, its draft: every one of those rows gets logits)."""
        tokens = sequence.feed[:count]
        last = count == len(sequence.feed)
        if last:
            tokens += sequence.draft
        batch = lane.batch
        slot = sequence.slot
        assert slot is not None
        for offset, token in enumerate(tokens):
            batch.token[n] = token
            batch.pos[n] = sequence.position + offset
            batch.n_seq_id[n] = 1
            batch.seq_id[n][0] = slot.index
            batch.logits[n] = last and offset >= count - 1
            n += 1
        slot.tokens.extend(tokens)
        del sequence.feed[:count]
        sequence.position += len(tokens)
        return n

    # ---- speculative decoding ------------------------------------------------------

    def _draft(self, sequence: _Sequence, budget: int) -> list[int]:
        """The tokens the sequence drafts this step, within the step's budget, its
        max_tokens and its lane's window (none while reasoning: a forced close would
        leave drafted tokens sampled for a text that is not the reply's)."""
        reasoning = sequence.reasoning
        if self._pool is None or (reasoning is not None and (reasoning.open or
                                                             reasoning.waiting)):
            return []
        room = min(budget, sequence.request.max_tokens - sequence.generated - 1,
                   sequence.lane.window - sequence.position - 2)
        if room <= 0:
            return []
        wanted = sequence.drafts.wanted()
        if wanted <= 0:
            return []
        if sequence.history is None:
            sequence.history = NgramIndex([*sequence.request.prompt, *sequence.reply])
        return draft_for(sequence.history, self._pool, min(wanted, room))

    def _verify(self, sequence: _Sequence, row: int) -> None:
        """Sample the rows of a drafted step in order while the sampled token is the
        drafted one; the first that differs (or the row after the whole draft) gives one
        more token. Every token taken was sampled from the model's own distribution at
        its place, so the reply is what decoding one token a step gives. The KV of the
        drafted tokens not taken is dropped."""
        draft, sequence.draft = sequence.draft, []
        if sequence.cancelled:
            self._release(sequence)
            return
        chosen: list[tuple[int, Any]] = []
        for offset in range(len(draft) + 1):
            token, logprobs = self._choose(sequence, row + offset)
            chosen.append((token, logprobs))
            if offset == len(draft) or token != draft[offset] or \
                    ll.llama_vocab_is_eog(self._vocab, token):
                break
        accepted = len(chosen) - 1
        sequence.drafts.record(len(draft), accepted)
        self.drafted_tokens += len(draft)
        self.accepted_tokens += accepted
        self._keep(sequence, len(draft) - accepted, row + accepted)
        for offset, (token, logprobs) in enumerate(chosen):
            sequence.logprobs = logprobs
            self._take(sequence, token, in_kv=offset < accepted)
            if sequence.slot is None:    # it ended
                return

    def _keep(self, sequence: _Sequence, dropped: int, row: int) -> None:
        """The last ``dropped`` cells of the sequence's KV go; ``row`` holds the logits
        that follow what is left."""
        slot = sequence.slot
        assert slot is not None
        lane = sequence.lane
        if dropped:
            sequence.position -= dropped
            ll.llama_memory_seq_rm(lane.memory, slot.index, sequence.position, -1)
            del slot.tokens[sequence.position:]
        lane.live_logits[slot.index] = row

    def _choose(self, sequence: _Sequence, index: int) -> tuple[int, Any]:
        """The token the sequence's sampler picks from a row of logits (and its
        log-probabilities, when the request asks for them)."""
        lane = sequence.lane
        token = sequence.sampler.sample(lane.ctx, index)
        top_n = sequence.request.top_logprobs
        return token, None if top_n is None else self._logprobs(lane, index, token, top_n)

    def _sample(self, sequence: _Sequence, index: int) -> None:
        if sequence.cancelled:
            self._release(sequence)
            return
        token, sequence.logprobs = self._choose(sequence, index)
        self._take(sequence, token)

    def _take(self, sequence: _Sequence, token: int, *, in_kv: bool = False) -> None:
        """The sampled token joins the reply; the sequence ends or goes on. ``in_kv``: a
        drafted token the step computed, so it is not fed again."""
        lane = sequence.lane
        end_of_turn = bool(ll.llama_vocab_is_eog(self._vocab, token))
        reasoning = sequence.reasoning
        if reasoning is not None and reasoning.open:
            if not end_of_turn:
                self._emit_token(sequence, token)
                reasoning.observe(self._last_text)
            if reasoning.must_close(end_of_turn):  # always true at an end of turn
                self._force(sequence, reasoning.close())
        elif end_of_turn:
            sequence.generated += 1
            self._finish(sequence, "eog")
            return
        else:
            self._emit_token(sequence, token, fed=not in_kv)
        if sequence.generated >= sequence.request.max_tokens:
            self._finish(sequence, "length")
        elif sequence.position + len(sequence.feed) >= lane.window:
            if lane is self._long_lane:
                self._finish(sequence, "length")
            else:
                sequence.moving = True

    def _logprobs(self, lane: Lane, index: int, token: int,
                  top_n: int) -> tuple[float, tuple[tuple[int, float], ...]]:
        """The token's log-probability and the ``top_n`` best, from the raw logits."""
        logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(lane.ctx, index),
                                       (self.info.vocab_size,)).astype(np.float64)
        peak = logits.max()
        log_total = peak + np.log(np.exp(logits - peak).sum())
        top: tuple[tuple[int, float], ...] = ()
        if top_n > 0:
            best = np.argpartition(-logits, top_n)[:top_n]
            best = best[np.argsort(-logits[best])]
            top = tuple((int(t), float(logits[t] - log_total)) for t in best)
        return float(logits[token] - log_total), top

    def _emit_token(self, sequence: _Sequence, token: int, *, fed: bool = True) -> None:
        sequence.generated += 1
        self._last_text = sequence.decoder.decode(self.token_bytes(token))
        logprob, top = sequence.logprobs if sequence.logprobs else (None, ())
        sequence.logprobs = None  # a forced token after this one was not sampled: none
        self._outbox.put(sequence, TokenEvent(token=token, text=self._last_text,
                                              logprob=logprob, top=top))
        if fed:
            sequence.feed.append(token)
        sequence.reply.append(token)
        if sequence.history is not None:
            sequence.history.extend((token,))

    def _force(self, sequence: _Sequence, tokens: list[int]) -> None:
        """Feed tokens the model did not choose, as if it had (they are output too)."""
        room = sequence.request.max_tokens - sequence.generated
        for token in tokens[:max(room, 0)]:
            sequence.sampler.accept(token)
            self._emit_token(sequence, token)

    def _finish(self, sequence: _Sequence, reason: str) -> None:
        tail = sequence.decoder.decode(b"", final=True)
        if tail:
            self._outbox.put(sequence, TokenEvent(token=-1, text=tail))
        self._outbox.put(sequence, GenerationDone(
            reason="eog" if reason == "eog" else "length",
            prompt_tokens=len(sequence.request.prompt),
            cached_tokens=sequence.cached,
            generated_tokens=sequence.generated,
            drafted_tokens=sequence.drafts.drafted,
            accepted_tokens=sequence.drafts.accepted,
        ))
        self._release(sequence)
