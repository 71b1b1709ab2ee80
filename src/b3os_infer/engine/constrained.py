"""Grammar-constrained sampling that only pays for the grammar when it must.

Checking every one of ~50k candidate tokens against a grammar at each step costs far
more than decoding a small model. As llama.cpp's own sampler does, we sample freely
first and ask the grammar about that one token; only when it is rejected do we apply
the grammar to the whole vocabulary and sample again.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import llama_cpp as ll
import numpy as np

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class ConstrainedSampler:
    """A sampling chain plus an optional grammar, kept apart."""

    def __init__(self, chain: Any, grammar: Any | None, n_vocab: int) -> None:
        self.chain = chain
        self.grammar = grammar
        self.n_vocab = n_vocab
        self._one = (ll.llama_token_data * 1)()

    def sample(self, ctx: Any, index: int) -> int:
        token = int(ll.llama_sampler_sample(self.chain, ctx, index))
        if self.grammar is None:
            return token
        if not self._allows(token):
            token = self._resample(ctx, index)
        ll.llama_sampler_accept(self.grammar, token)
        return token

    def accept(self, token: int) -> None:
        """A token fed without sampling (forced), so that every state follows it."""
        ll.llama_sampler_accept(self.chain, token)
        if self.grammar is not None:
            ll.llama_sampler_accept(self.grammar, token)

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
