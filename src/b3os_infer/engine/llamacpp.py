"""The embedded engine: llama.cpp in process, through llama-cpp-python's low-level API.

One scheduler thread owns the llama context. Each step it admits waiting requests as new
sequences, builds one ``llama_batch`` holding the next token of every decoding sequence
plus a chunk of pending prompt tokens, decodes it, and samples each sequence from its own
sampler chain.

Memory is one KV pool (``kv_unified``) of ``pool_tokens`` cells shared by all sequences
(engine/kv_pool.py): a new request starts from whichever cached sequence shares the
longest prefix with its prompt, running or finished, and those cells are shared, not
copied. A finished or cancelled sequence stays in the pool with every token it computed
until the room is needed (least recently used first); long ones are also saved to disk
and reloaded after a restart (engine/disk_cache.py). The event loop only ever waits on
queues.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import queue
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp as ll
import numpy as np

from ..errors import InternalError, InvalidRequest, Overloaded
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
from .disk_cache import DiskCache, model_identity
from .gguf import (
    display_name,
    model_metadata,
    quiet_llama,
    vocab_piece,
    vocab_text,
    vocab_tokenize,
)
from .kv_cache import DEFAULT_KV_TYPE, DEFAULT_POOL_TOKENS
from .kv_pool import KvPool
from .prefill_log import LONG_PREFILL_TOKENS, PrefillLog
from .prefix_index import Entry
from .reasoning import ReasoningTracker
from .samplers import sampler_chain

log = logging.getLogger(__name__)


def _failed(exc: Exception) -> InternalError:
    return InternalError("the engine failed while generating", detail=repr(exc))

_SCHEDULER_STACK_BYTES = 512 * 1024 * 1024
_KV_TYPES = {"f16": ll.GGML_TYPE_F16, "q8_0": ll.GGML_TYPE_Q8_0}
_MAX_SEQUENCE_IDS = 256   # llama.cpp's LLAMA_MAX_SEQ


@dataclass
class LlamaCppSettings:
    model_path: str
    n_threads: int = 2
    parallel: int = 8
    batch_tokens: int = 512
    context_window: int | None = None
    kv_type: str = DEFAULT_KV_TYPE
    # the KV pool, in tokens, shared by running sequences and cached prefixes; a
    # sequence's window is at most this
    pool_tokens: int = DEFAULT_POOL_TOKENS
    # sequence ids beyond the ``parallel`` running ones, for finished sequences kept as
    # cached prefixes (idle running ids hold them too); each one slows batched decode
    cached_prefixes: int = 0
    # where long prefixes are saved across restarts (None: nowhere), the bytes all such
    # files may take, and how many new tokens make a sequence worth a file
    disk_cache: Path | None = None
    disk_budget_bytes: int = 4 << 30
    disk_min_tokens: int = 2048
    # a reused prefix shorter than this (a chat template's first tokens) is still read from
    # the KV, but counted as input, not as cached: both APIs report only long cached prefixes
    min_reported_cache: int = 64


@dataclass(eq=False)
class _Sequence:
    request: GenerationRequest
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue[EngineEvent | BaseException]
    cancelled: bool = False
    entry: Entry | None = None
    sampler: Any = None
    position: int = 0
    copied: int = 0          # prompt tokens whose cells it shares with the entry it came from
    feed: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    progress: PrefillLog | None = None
    reasoning: ReasoningTracker | None = None
    logprobs: tuple[float, tuple[tuple[int, float], ...]] | None = None
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def __post_init__(self) -> None:
        if self.request.reasoning is not None:
            self.reasoning = ReasoningTracker(self.request.reasoning)

    @property
    def prefilling(self) -> bool:
        return len(self.feed) > 1

    def own_cells(self) -> int:
        """Cells this sequence holds or will hold for its prompt beyond the shared prefix."""
        return self.position + len(self.feed) - self.copied


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


# one step's work: (sequence, how many of its feed tokens go into the batch)
_Plan = list[tuple[_Sequence, int]]


class LlamaCppEngine:
    """Continuous batching over one llama.cpp context and its shared KV pool."""

    def __init__(self, settings: LlamaCppSettings) -> None:
        self.settings = settings
        quiet_llama()
        model_params = ll.llama_model_default_params()
        self._model = ll.llama_model_load_from_file(settings.model_path.encode(), model_params)
        if not self._model:
            raise RuntimeError(f"llama.cpp could not load {settings.model_path}")
        self._vocab = ll.llama_model_get_vocab(self._model)
        trained = ll.llama_model_n_ctx_train(self._model)
        window = settings.context_window or trained
        if window > settings.pool_tokens:
            log.warning("the KV pool (%d tokens) is smaller than the window %d: serving %d",
                        settings.pool_tokens, window, settings.pool_tokens)
            window = settings.pool_tokens
        self.trained_window = trained
        self._ctx = self._new_context(window, trained)
        self.info = EngineInfo(
            context_window=window,
            vocab_size=ll.llama_vocab_n_tokens(self._vocab),
            description=(f"llama.cpp, {settings.n_threads} threads, {settings.parallel} "
                         f"sequences, a {settings.pool_tokens}-token {settings.kv_type} KV pool"),
            applies_grammars=True,
            slots=settings.parallel,
        )
        self._pool = KvPool(self._ctx, self._sequence_ids(), self._disk_cache(window, trained))
        self._batch = ll.llama_batch_init(settings.batch_tokens + settings.parallel, 0, 1)
        self._inbox: queue.Queue[_Sequence | None] = queue.Queue()
        self._waiting: list[_Sequence] = []
        self._active: list[_Sequence] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._outbox = _Outbox()
        self._last_text = ""

    def _sequence_ids(self) -> int:
        return min(self.settings.parallel + self.settings.cached_prefixes, _MAX_SEQUENCE_IDS)

    def _new_context(self, window: int, trained: int) -> Any:
        """One unified KV pool for every sequence id, f16 by default (with flash attention
        where llama.cpp finds it supported, as llama-server does)."""
        params = ll.llama_context_default_params()
        params.n_ctx = self.settings.pool_tokens
        params.n_batch = self.settings.batch_tokens + self.settings.parallel
        params.n_ubatch = self.settings.batch_tokens + self.settings.parallel
        params.n_seq_max = self._sequence_ids()
        params.n_threads = self.settings.n_threads
        params.n_threads_batch = self.settings.n_threads
        params.kv_unified = True
        if window > trained:  # stretch the rotary positions with YaRN
            params.rope_scaling_type = ll.LLAMA_ROPE_SCALING_TYPE_YARN
            params.rope_freq_scale = trained / window
            params.yarn_orig_ctx = trained
        if self.settings.kv_type not in _KV_TYPES:
            raise ValueError(f"kv_type must be one of {', '.join(_KV_TYPES)}")
        params.type_k = params.type_v = _KV_TYPES[self.settings.kv_type]
        if self.settings.kv_type != "f16":  # a quantized V cache needs flash attention
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
        await asyncio.to_thread(self._pool.close)   # the disk writes queued so far
        ll.llama_batch_free(self._batch)
        ll.llama_free(self._ctx)
        ll.llama_model_free(self._model)

    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def load(self) -> dict[str, int]:
        return {"active": len(self._active), "waiting": len(self._waiting) + self._inbox.qsize()}

    def kv_usage(self) -> KvUsage:
        """Tokens the pool's entries hold (running and parked sequences; a prefix two of them
        share is counted for each, so this may overstate), of the pool's cells."""
        pool = self.settings.pool_tokens
        while True:   # read from another thread than the scheduler's, which may be changing them
            try:
                held = sum(len(entry.tokens) for entry in list(self._pool.index.entries()))
                return KvUsage(min(held, pool), pool)
            except RuntimeError:
                continue

    def pool_stats(self) -> dict[str, int]:
        """Prompt tokens still to compute, and what the pool and the disk cache hold."""
        disk = self._pool.disk
        while True:   # read from another thread than the scheduler's, which may be changing them
            try:
                return {"prefill_left": sum(len(s.feed) for s in list(self._active)
                                            if s.prefilling),
                        "parked": len(self._pool.index.parked()),
                        "cached_tokens": self._pool.index.cached_tokens(),
                        "disk_files": len(disk.entries()) if disk is not None else 0}
            except RuntimeError:
                continue

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
            if self._admit():
                self._outbox.flush()   # before a long prefill, its client hears it is admitted
            if self._active:
                try:
                    self._step()
                except Exception as exc:  # a failed decode fails the sequences in it
                    log.exception("decode step failed")
                    for sequence in list(self._active):
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

    def _admit(self) -> bool:
        """Seat waiting requests while there is room; True if one has a long prefill ahead."""
        long_prefill = False
        while self._waiting and len(self._active) < self.settings.parallel:
            candidate = self._waiting[0]
            if not self._room_for(candidate.request.prompt):
                break   # it waits for running sequences to end (first come, first served)
            self._waiting.pop(0)
            try:
                candidate.sampler = sampler_chain(self._vocab, candidate.request)
            except ValueError as exc:
                self._outbox.put(candidate, InvalidRequest(str(exc)))
                continue
            except Exception as exc:  # never let one request stop the scheduler
                log.exception("building a sampler failed")
                self._outbox.put(candidate, _failed(exc))
                continue
            try:
                row = self._seat(candidate)
            except Exception as exc:  # never let one request stop the scheduler
                log.exception("seating a sequence failed")
                self._outbox.put(candidate, _failed(exc))
                self._release(candidate, keep_kv=False)
                continue
            long_prefill = long_prefill or candidate.progress is not None
            self._active.append(candidate)
            if row is not None:  # its whole prompt is in KV, its next logits still here
                self._sample(candidate, row)
        return long_prefill

    def _room_for(self, prompt: list[int]) -> bool:
        """Whether the prompt's new cells fit in the pool beside the running sequences'.

        An estimate: each running sequence's own cells, plus the longest prefix they share
        with what they came from (shared cells are counted once, at least); parked entries
        do not count, being evicted when room is needed.
        """
        if not self._active:
            return True
        own = sum(sequence.own_cells() for sequence in self._active)
        shared = max(sequence.copied for sequence in self._active)
        new = len(prompt) - self._pool.index.longest(prompt).shared
        return own + shared + new <= self.settings.pool_tokens

    def _seat(self, sequence: _Sequence) -> int | None:
        """Give the sequence an entry of the pool, starting from the longest cached prefix.

        Returns the row of the last decode's logits to sample from when a cached entry
        holds exactly this prompt and those logits are still there (the same prompt again,
        with no decode since): nothing is computed then. Otherwise at least the last prompt
        token is decoded again for its logits, and None is returned."""
        prompt = sequence.request.prompt
        seat = self._pool.seat(prompt)
        sequence.entry = seat.entry
        sequence.position = sequence.copied = seat.reuse
        # the last prompt token is counted as input even when it was not computed again
        counted = min(seat.reuse, len(prompt) - 1)
        sequence.cached = counted if counted >= self.settings.min_reported_cache else 0
        sequence.feed = list(prompt[seat.reuse:])
        if len(sequence.feed) >= LONG_PREFILL_TOKENS:
            sequence.progress = PrefillLog(f"sequence {seat.entry.seq_id}", len(prompt),
                                           seat.reuse)
        self._outbox.put(sequence, Admitted(len(prompt), sequence.cached))
        return seat.row

    def _release(self, sequence: _Sequence, *, keep_kv: bool = True) -> None:
        """End the sequence; its KV stays in the pool as a cached prefix."""
        if sequence in self._active:
            self._active.remove(sequence)
        if sequence.progress is not None:
            sequence.progress.finish(cancelled=True)
            sequence.progress = None
        if sequence.entry is not None:
            if keep_kv:
                self._pool.park(sequence.entry)
            else:
                self._pool.drop(sequence.entry)
            sequence.entry = None
        if sequence.sampler is not None:
            sequence.sampler.free()
            sequence.sampler = None

    # ---- one decode ------------------------------------------------------------------

    def _step(self) -> None:
        """One decode: every sequence's next token, then prompt chunks in what is left.

        When the pool has no room for the batch, parked entries are evicted (least
        recently used first) and the decode tried again; with none left, prompt chunks wait,
        and as a last resort the newest sequence is refused (its KV stays cached)."""
        plan = self._plan()
        while plan:
            status = self._decode(plan)
            if status == 0:
                break
            if status != 1:
                raise RuntimeError(f"llama_decode returned {status}")
            plan = self._make_room(plan)
        if not plan:
            return
        outputs = self._commit(plan)
        self._pool.live = {sequence.entry: row for sequence, row in outputs
                           if sequence.entry is not None}
        for sequence, row in outputs:
            self._sample(sequence, row)

    def _plan(self) -> _Plan:
        plan: _Plan = [(sequence, 1) for sequence in self._active if len(sequence.feed) == 1]
        budget = self.settings.batch_tokens
        for sequence in self._active:
            if budget <= 0 or not sequence.prefilling:
                continue
            take = min(budget, len(sequence.feed))
            plan.append((sequence, take))
            budget -= take
        return plan

    def _decode(self, plan: _Plan) -> int:
        batch = self._batch
        n = 0
        for sequence, count in plan:
            assert sequence.entry is not None
            for offset in range(count):
                batch.token[n] = sequence.feed[offset]
                batch.pos[n] = sequence.position + offset
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = sequence.entry.seq_id
                batch.logits[n] = offset == count - 1 and count == len(sequence.feed)
                n += 1
        batch.n_tokens = n
        self._pool.live = {}
        return int(ll.llama_decode(self._ctx, batch))

    def _make_room(self, plan: _Plan) -> _Plan:
        if self._pool.evict():
            return plan
        decoding = [(sequence, count) for sequence, count in plan if not sequence.prefilling]
        if decoding and len(decoding) < len(plan):
            return decoding   # prompt chunks wait for room
        newest = plan[-1][0]
        log.warning("the KV pool is full: refusing the newest sequence")
        self._outbox.put(newest, Overloaded("the KV pool is full; retry later (the prompt "
                                            "computed so far stays cached)"))
        self._release(newest)
        return [(sequence, count) for sequence, count in plan if sequence is not newest]

    def _commit(self, plan: _Plan) -> list[tuple[_Sequence, int]]:
        """The decoded tokens are the entries' now; the rows to sample, per sequence."""
        outputs = []
        row = 0
        for sequence, count in plan:
            assert sequence.entry is not None
            sequence.entry.tokens.extend(sequence.feed[:count])
            del sequence.feed[:count]
            sequence.position += count
            row += count
            if sequence.progress is not None:
                sequence.progress.advance(count)
            if not sequence.feed:
                if sequence.progress is not None:
                    sequence.progress.finish()
                    sequence.progress = None
                outputs.append((sequence, row - 1))
        return outputs

    def _sample(self, sequence: _Sequence, index: int) -> None:
        if sequence.cancelled:
            self._release(sequence)
            return
        token = sequence.sampler.sample(self._ctx, index)
        if sequence.request.top_logprobs is not None:
            sequence.logprobs = self._logprobs(index, token, sequence.request.top_logprobs)
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
            self._emit_token(sequence, token)
        request = sequence.request
        window_full = sequence.position + len(sequence.feed) >= self.info.context_window
        if sequence.generated >= request.max_tokens or window_full:
            self._finish(sequence, "length")

    def _logprobs(self, index: int, token: int,
                  top_n: int) -> tuple[float, tuple[tuple[int, float], ...]]:
        """The token's log-probability and the ``top_n`` best, from the raw logits."""
        logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(self._ctx, index),
                                       (self.info.vocab_size,)).astype(np.float64)
        peak = logits.max()
        log_total = peak + np.log(np.exp(logits - peak).sum())
        top: tuple[tuple[int, float], ...] = ()
        if top_n > 0:
            best = np.argpartition(-logits, top_n)[:top_n]
            best = best[np.argsort(-logits[best])]
            top = tuple((int(t), float(logits[t] - log_total)) for t in best)
        return float(logits[token] - log_total), top

    def _emit_token(self, sequence: _Sequence, token: int) -> None:
        sequence.generated += 1
        self._last_text = sequence.decoder.decode(self.token_bytes(token))
        logprob, top = sequence.logprobs if sequence.logprobs else (None, ())
        sequence.logprobs = None  # a forced token after this one was not sampled: none
        self._outbox.put(sequence, TokenEvent(token=token, text=self._last_text,
                                              logprob=logprob, top=top))
        sequence.feed.append(token)

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
        ))
        self._release(sequence)

