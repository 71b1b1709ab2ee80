"""The sampler chain of one request: its sampling settings and its grammar, in llama.cpp."""

from __future__ import annotations

from typing import Any

import llama_cpp as ll

from ...core import Sampling
from ..base import GenerationRequest, Grammar
from .constrained import ConstrainedSampler, LazyStart, Trigger
from .gguf import vocab_piece, vocab_tokenize


def sampler_chain(vocab: Any, request: GenerationRequest) -> ConstrainedSampler:
    """The request's own sampler: its sampling settings, and its grammar if any (a lazy
    one waits for its trigger in ``ConstrainedSampler``)."""
    grammar = None if request.grammar is None else grammar_sampler(vocab, request.grammar)
    n_vocab = ll.llama_vocab_n_tokens(vocab)
    chain = _chain(request.sampling, n_vocab, request.max_tokens)
    trigger = request.grammar.trigger if request.grammar is not None else None
    lazy = None if trigger is None else LazyStart(
        Trigger(trigger), lambda token: vocab_piece(vocab, token, special=True).decode(
            "utf-8", "replace"), lambda text: vocab_tokenize(vocab, text, False))
    return ConstrainedSampler(chain, grammar, n_vocab, lazy)


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
    """llama.cpp's grammar sampler, from the grammar's start (a lazy grammar's trigger is
    watched by ``ConstrainedSampler``, which brings this one up to date when it shows)."""
    sampler = ll.llama_sampler_init_grammar(vocab, grammar.gbnf.encode(), b"root")
    if not sampler:
        raise ValueError("the grammar for this request could not be built")
    return sampler
