"""The sampler chain of one request: its sampling settings and its grammar, in llama.cpp."""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp as ll

from ..core import Sampling
from .base import GenerationRequest, Grammar
from .constrained import ConstrainedSampler


def sampler_chain(vocab: Any, request: GenerationRequest) -> ConstrainedSampler:
    """The request's own sampler: its sampling settings, and its grammar if any."""
    grammar = None if request.grammar is None else grammar_sampler(vocab, request.grammar)
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


def grammar_sampler(vocab: Any, grammar: Grammar) -> Any:
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
