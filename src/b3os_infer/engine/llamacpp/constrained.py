"""Grammar-constrained sampling that only pays for the grammar when it must.

Checking every one of ~50k candidate tokens against a grammar at each step costs far
more than decoding a small model. As llama.cpp's own sampler does, we sample freely
first and ask the grammar about that one token; only when it is rejected do we apply
the grammar to the whole vocabulary and sample again.

A lazy grammar (a tool call's, which applies from ``<tool_call>`` on) waits for its
trigger here too (``Trigger``), not in llama.cpp: llama.cpp's lazy grammar matches a
regular expression against all the text generated so far at every token, which grows
with the reply (measured with Claude Code's 24 tools: 11 ms a token after 100 tokens,
175 ms after 400), so a long reply beside declared tools decoded ever slower.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import Any

import llama_cpp as ll
import numpy as np

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class Trigger:
    """Where a lazy grammar starts: the first time its text shows up in the reply. Each
    token is looked at with only the few characters before it, so it costs the same
    however long the reply has grown."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._tail = ""

    def feed(self, piece: str) -> str | None:
        """Once the trigger shows: the text from its start to the end of ``piece``."""
        window = self._tail + piece
        start = window.find(self.text)
        if start >= 0:
            return window[start:]
        self._tail = window[max(0, len(window) - len(self.text) + 1):]
        return None


class LazyStart:
    """What a lazy grammar needs from the vocabulary: each token's text, to watch for the
    trigger, and the tokens of a text, to bring the grammar up to the end of the token
    that completed it."""

    def __init__(self, trigger: Trigger, piece: Callable[[int], str],
                 tokenize: Callable[[str], list[int]]) -> None:
        self.trigger = trigger
        self.piece = piece
        self.tokenize = tokenize


class ConstrainedSampler:
    """A sampling chain plus an optional grammar, kept apart; with ``lazy``, the grammar
    applies from its trigger on."""

    def __init__(self, chain: Any, grammar: Any | None, n_vocab: int,
                 lazy: LazyStart | None = None) -> None:
        self.chain = chain
        self.grammar = grammar
        self.n_vocab = n_vocab
        self._lazy = lazy if grammar is not None else None
        self._one = (ll.llama_token_data * 1)()

    def sample(self, ctx: Any, index: int) -> int:
        token = int(ll.llama_sampler_sample(self.chain, ctx, index))
        if self.grammar is None:
            return token
        if self._lazy is not None:
            self._watch(self._lazy, token)
            return token
        if not self._allows(token):
            token = self._resample(ctx, index)
        ll.llama_sampler_accept(self.grammar, token)
        return token

    def accept(self, token: int) -> None:
        """A token fed without sampling (forced), so that every state follows it."""
        ll.llama_sampler_accept(self.chain, token)
        if self.grammar is None:
            return
        if self._lazy is not None:
            self._watch(self._lazy, token)
        else:
            ll.llama_sampler_accept(self.grammar, token)

    def _watch(self, lazy: LazyStart, token: int) -> None:
        """Before its trigger the grammar is not asked; the token that completes the
        trigger brings it up to date (text from the trigger on), and from then on it
        applies. Text the grammar would refuse there (a model's own variant of the
        trigger's line) leaves the reply unconstrained, as text."""
        started = lazy.trigger.feed(lazy.piece(token))
        if started is None:
            return
        self._lazy = None
        tokens = lazy.tokenize(started)
        for fed in tokens:
            if not self._allows(fed):
                ll.llama_sampler_free(self.grammar)
                self.grammar = None
                return
            ll.llama_sampler_accept(self.grammar, fed)

    def free(self) -> None:
        ll.llama_sampler_free(self.chain)
        if self.grammar is not None:
            ll.llama_sampler_free(self.grammar)

    def _allows(self, token: int) -> bool:
        self._one[0].id = token  # type: ignore[assignment]
        self._one[0].logit = 0.0
        self._one[0].p = 0.0
        single = ll.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        ll.llama_sampler_apply(self.grammar, ctypes.byref(single))
        return math.isfinite(self._one[0].logit)

    def _resample(self, ctx: Any, index: int) -> int:
        logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, index), (self.n_vocab,))
        data = np.empty(self.n_vocab, dtype=_TOKEN_DATA)
        data["id"] = np.arange(self.n_vocab, dtype=np.int32)
        data["logit"] = logits
        data["p"] = 0.0
        pointer = data.ctypes.data_as(ctypes.POINTER(ll.llama_token_data))
        candidates = ll.llama_token_data_array(data=pointer, size=self.n_vocab, selected=-1,
                                               sorted=False)
        ll.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        ll.llama_sampler_apply(self.chain, ctypes.byref(candidates))
        return int(data["id"][candidates.selected])
