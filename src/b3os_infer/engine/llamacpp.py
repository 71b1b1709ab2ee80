"""The embedded engine: llama.cpp in process, through llama-cpp-python's low-level API.

One scheduler thread owns the llama context. Each step it admits waiting requests into
free sequence slots, builds one ``llama_batch`` holding the next token of every decoding
sequence plus a chunk of pending prompt tokens, decodes it, and samples each sequence
from its own sampler chain. A finished or cancelled sequence leaves its KV in its slot: the next
request is seated in the free slot that shares the longest prefix with its prompt, and
only the rest is dropped (``llama_memory_seq_rm``) and computed. When a running sequence
shares a much longer prefix, its KV is copied into the least recently used free slot
instead. The prefix cache is therefore bounded by the slots' KV, allocated once
(``parallel`` x context window tokens), and evicts least recently used first. The event
loop only ever waits on queues.
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
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

from ..core import Sampling
from ..errors import InternalError, InvalidRequest
from .base import (
    Admitted,
    EngineEvent,
    EngineInfo,
    GenerationDone,
    GenerationRequest,
    Grammar,
    KvUsage,
    TokenEvent,
    check_fits,
)
from .constrained import ConstrainedSampler
from .gguf import (
    display_name,
    model_metadata,
    quiet_llama,
    vocab_piece,
    vocab_text,
    vocab_tokenize,
)
from .kv_cache import DEFAULT_KV_TYPE
from .reasoning import ReasoningTracker

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
    # a reused prefix shorter than this (a chat template's first tokens) is still read from
    # the KV, but counted as input, not as cached: both APIs report only long cached prefixes
    min_reported_cache: int = 64
    # a running sequence's KV is copied only when it shares this many tokens more than the
    # best free slot (the copy moves the whole stream)
    min_prefix_copy: int = 64


@dataclass(eq=False)
class _Sequence:
    request: GenerationRequest
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue[EngineEvent | BaseException]
    cancelled: bool = False
    seq_id: int = -1
    sampler: Any = None
    position: int = 0
    feed: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    reasoning: ReasoningTracker | None = None
    logprobs: tuple[float, tuple[tuple[int, float], ...]] | None = None
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def __post_init__(self) -> None:
        if self.request.reasoning is not None:
            self.reasoning = ReasoningTracker(self.request.reasoning)


@dataclass(eq=False)
class _Slot:
    """A sequence id with its own KV stream, and the tokens that stream holds."""

    index: int
    tokens: list[int] = field(default_factory=list)
    busy: bool = False
    last_used: float = 0.0

    def common_prefix(self, prompt: list[int]) -> int:
        count = 0
        for mine, theirs in zip(self.tokens, prompt, strict=False):
            if mine != theirs:
                break
            count += 1
        return count


@dataclass(frozen=True)
class _Seat:
    """Where a new sequence goes: a free slot, how much of its prompt is already in KV,
    and the busy slot to copy that KV from (None: the free slot holds it itself)."""

    slot: _Slot
    shared: int
    source: _Slot | None = None


def _pick_slot(slots: list[_Slot], prompt: list[int], min_copy: int) -> _Seat:
    """The free slot sharing the longest prefix (among equals, the least recently used).

    When a running sequence shares a prefix longer by at least ``min_copy`` tokens, its
    KV is copied instead, into the least recently used free slot: that slot's own cache
    is the one worth least.
    """
    free = [slot for slot in slots if not slot.busy]
    scored = [(slot.common_prefix(prompt), -slot.last_used, slot) for slot in free]
    shared, _, slot = max(scored, key=lambda item: item[:2])
    running = [(other.common_prefix(prompt), other) for other in slots if other.busy]
    if running:
        longest, source = max(running, key=lambda item: item[0])
        if longest >= shared + min_copy:
            oldest = min(free, key=lambda other: other.last_used)
            return _Seat(oldest, longest, source)
    return _Seat(slot, shared)


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


class LlamaCppEngine:
    """Continuous batching over one llama.cpp context, one KV stream per slot."""

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
        self.trained_window = trained
        self._ctx = self._new_context(window, trained)
        self._memory = ll.llama_get_memory(self._ctx)
        self.info = EngineInfo(
            context_window=window,
            vocab_size=ll.llama_vocab_n_tokens(self._vocab),
            description=f"llama.cpp, {settings.n_threads} threads, {settings.parallel} slots",
            applies_grammars=True,
            slots=settings.parallel,
        )
        self._batch = ll.llama_batch_init(settings.batch_tokens + settings.parallel, 0, 1)
        self._inbox: queue.Queue[_Sequence | None] = queue.Queue()
        self._waiting: list[_Sequence] = []
        self._active: list[_Sequence] = []
        self._slots = [_Slot(i) for i in range(settings.parallel)]
        # slot index -> the row of the last decode's logits that follows the slot's tokens;
        # valid until the next decode or until the slot's tokens change
        self._live_logits: dict[int, int] = {}
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._outbox = _Outbox()
        self._last_text = ""

    def _new_context(self, window: int, trained: int) -> Any:
        """One KV stream per sequence slot, each holding a whole context window.

        Separate streams keep each sequence's attention to its own cells, which
        measured faster here than one unified pool once several sequences run.
        """
        params = ll.llama_context_default_params()
        params.n_ctx = window * self.settings.parallel
        params.n_batch = self.settings.batch_tokens + self.settings.parallel
        params.n_ubatch = self.settings.batch_tokens + self.settings.parallel
        params.n_seq_max = self.settings.parallel
        params.n_threads = self.settings.n_threads
        params.n_threads_batch = self.settings.n_threads
        params.kv_unified = False
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
        ll.llama_batch_free(self._batch)
        ll.llama_free(self._ctx)
        ll.llama_model_free(self._model)

    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def load(self) -> dict[str, int]:
        return {"active": len(self._active), "waiting": len(self._waiting) + self._inbox.qsize()}

    def kv_usage(self) -> KvUsage:
        """Tokens the slots hold in KV, of the pool's cells (a window per slot); read
        from the slots' token lists, which the scheduler thread keeps."""
        used = sum(len(slot.tokens) for slot in self._slots)
        return KvUsage(used, self.info.context_window * self.settings.parallel)

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
            self._admit()
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

    def _admit(self) -> None:
        while self._waiting and any(not slot.busy for slot in self._slots):
            candidate = self._waiting.pop(0)
            try:
                candidate.sampler = _sampler_chain(self._vocab, candidate.request)
            except ValueError as exc:
                self._outbox.put(candidate, InvalidRequest(str(exc)))
                continue
            except Exception as exc:  # never let one request stop the scheduler
                log.exception("building a sampler failed")
                self._outbox.put(candidate, _failed(exc))
                continue
            seat = _pick_slot(self._slots, candidate.request.prompt,
                              self.settings.min_prefix_copy)
            if seat.source is not None:
                self._copy_slot(seat.source, seat.slot)
            row = self._seat(candidate, seat.slot, seat.shared)
            self._active.append(candidate)
            if row is not None:  # its whole prompt is in KV, its next logits still here
                self._sample(candidate, row)

    def _copy_slot(self, source: _Slot, target: _Slot) -> None:
        """Copy a running sequence's KV into a free slot (done at the next decode).

        Each slot has its own KV stream, so llama.cpp copies the whole stream: costly for
        a long window, but far cheaper than computing a long shared prefix again.
        """
        ll.llama_memory_seq_cp(self._memory, source.index, target.index, -1, -1)
        target.tokens = list(source.tokens)
        self._live_logits.pop(target.index, None)

    def _seat(self, sequence: _Sequence, slot: _Slot, shared: int) -> int | None:
        """Put the sequence in the slot, keeping the KV of the ``shared`` prefix.

        Returns the row of the last decode's logits to sample from when the slot holds
        exactly this prompt and those logits are still there (the same prompt again, with
        no decode since): nothing is computed then. Otherwise the last prompt token is
        decoded again for its logits, and None is returned."""
        prompt = sequence.request.prompt
        row = self._live_logits.get(slot.index)
        if row is not None and not shared == len(prompt) == len(slot.tokens):
            row = None  # the slot's tokens are about to change: its row is stale
            del self._live_logits[slot.index]
        reuse = len(prompt) if row is not None else min(shared, len(prompt) - 1)
        if not ll.llama_memory_seq_rm(self._memory, slot.index, reuse, -1):
            ll.llama_memory_seq_rm(self._memory, slot.index, -1, -1)
            reuse, row = 0, None
            self._live_logits.pop(slot.index, None)
        slot.busy = True
        del slot.tokens[reuse:]
        sequence.seq_id = slot.index
        sequence.position = reuse
        # the last prompt token is counted as input even when it was not computed again
        counted = min(reuse, len(prompt) - 1)
        sequence.cached = counted if counted >= self.settings.min_reported_cache else 0
        sequence.feed = list(prompt[reuse:])
        self._outbox.put(sequence, Admitted(len(prompt), sequence.cached))
        return row

    def _release(self, sequence: _Sequence, *, keep_kv: bool = True) -> None:
        """Free the slot; its KV stays for the next request that shares the prefix."""
        if sequence in self._active:
            self._active.remove(sequence)
        if sequence.seq_id >= 0:
            slot = self._slots[sequence.seq_id]
            if not keep_kv:
                ll.llama_memory_seq_rm(self._memory, slot.index, -1, -1)
                slot.tokens.clear()
                self._live_logits.pop(slot.index, None)
            slot.busy = False
            slot.last_used = time.monotonic()
            sequence.seq_id = -1
        if sequence.sampler is not None:
            sequence.sampler.free()
            sequence.sampler = None

    def _step(self) -> None:
        """One decode: every sequence's next token, then prompt chunks in what is left."""
        n = 0
        outputs: list[tuple[_Sequence, int]] = []
        for sequence in self._active:
            if len(sequence.feed) == 1:
                n = self._put(n, sequence, 1)
                outputs.append((sequence, n - 1))
        budget = self.settings.batch_tokens
        for sequence in self._active:
            if budget <= 0 or len(sequence.feed) <= 1:
                continue
            take = min(budget, len(sequence.feed))
            n = self._put(n, sequence, take)
            budget -= take
            if not sequence.feed:
                outputs.append((sequence, n - 1))
        self._batch.n_tokens = n
        self._live_logits = {}
        status = ll.llama_decode(self._ctx, self._batch)
        if status != 0:
            raise RuntimeError(f"llama_decode returned {status}")
        self._live_logits = {sequence.seq_id: index for sequence, index in outputs}
        for sequence, index in outputs:
            self._sample(sequence, index)

    def _put(self, n: int, sequence: _Sequence, count: int) -> int:
        """Move ``count`` tokens from the sequence's feed into the batch."""
        batch = self._batch
        for offset in range(count):
            batch.token[n] = sequence.feed[offset]
            batch.pos[n] = sequence.position + offset
            batch.n_seq_id[n] = 1
            batch.seq_id[n][0] = sequence.seq_id
            batch.logits[n] = offset == count - 1 and count == len(sequence.feed)
            n += 1
        self._slots[sequence.seq_id].tokens.extend(sequence.feed[:count])
        del sequence.feed[:count]
        sequence.position += count
        return n

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


def _sampler_chain(vocab: Any, request: GenerationRequest) -> ConstrainedSampler:
    """The request's own sampler: its sampling settings, and its grammar if any."""
    grammar = None if request.grammar is None else _grammar_sampler(vocab, request.grammar)
    n_vocab = ll.llama_vocab_n_tokens(vocab)
    return ConstrainedSampler(_chain(request.sampling, n_vocab, request.max_tokens), grammar,
                              n_vocab)


def _chain(sampling: Sampling, n_vocab: int, window: int) -> Any:
    chain = ll.llama_sampler_chain_init(ll.llama_sampler_chain_default_params())
    if sampling.logit_bias:
        biases = (ll.llama_logit_bias * len(sampling.logit_bias))()
        for slot, (token, bias) in zip(biases, sampling.logit_bias, strict=True):
            slot.token, slot.bias = token, bias
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_logit_bias(
            n_vocab, len(sampling.logit_bias), biases))
    if sampling.presence_penalty or sampling.frequency_penalty:
        # the window is every token this request may generate (the chain sees only those)
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_penalties(
            n_vocab, max(window, 1), 1.0, sampling.frequency_penalty, sampling.presence_penalty))
    if sampling.temperature <= 0:
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_greedy())
        return chain
    if sampling.top_k > 0:
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_top_k(sampling.top_k))
    if sampling.top_p < 1.0:
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_top_p(sampling.top_p, 1))
    ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_temp(sampling.temperature))
    seed = ll.LLAMA_DEFAULT_SEED if sampling.seed is None else sampling.seed & 0xFFFFFFFF
    ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_dist(seed))
    return chain


def _grammar_sampler(vocab: Any, grammar: Grammar) -> Any:
    text = grammar.gbnf.encode()
    if grammar.trigger is None:
        sampler = ll.llama_sampler_init_grammar(vocab, text, b"root")
    else:
        patterns = (ctypes.c_char_p * 1)(_trigger_pattern(grammar.trigger).encode())
        no_tokens = (ll.llama_token * 1)()
        sampler = ll.llama_sampler_init_grammar_lazy_patterns(vocab, text, b"root", patterns,
                                                              1, no_tokens, 0)
    if not sampler:
        raise ValueError("the grammar for this request could not be built")
    return sampler


def _trigger_pattern(trigger: str) -> str:
    """A lazy grammar starts at the first match of the pattern's first group."""
    escaped = "".join("\\" + c if c in "\\.^$|?*+()[]{}" else c for c in trigger)
    return f"[\\s\\S]*?({escaped})[\\s\\S]*"
