"""Tokens from logits: the sequence's sampler picks one (with log-probabilities when asked),
and the token joins the reply, closes its reasoning, or ends it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import llama_cpp as ll
import numpy as np

from ..base import GenerationDone, TokenEvent
from .lanes import Lane
from .model import Model
from .sequence import Outbox, Sequence


class Replies:
    """What sampling does to each sequence's reply; ``release`` frees an ended one."""

    def __init__(self, model: Model, outbox: Outbox, long_lane: Lane,
                 release: Callable[[Sequence], None]) -> None:
        self.model = model
        self._outbox = outbox
        self._long_lane = long_lane
        self._release = release
        self._last_text = ""

    def choose(self, sequence: Sequence, index: int) -> tuple[int, Any]:
        """The token the sequence's sampler picks from a row of logits (and its
        log-probabilities, when the request asks for them)."""
        lane = sequence.lane
        token = sequence.sampler.sample(lane.ctx, index)
        top_n = sequence.request.top_logprobs
        return token, None if top_n is None else self._logprobs(lane, index, token, top_n)

    def sample(self, sequence: Sequence, index: int) -> None:
        if sequence.cancelled:
            self._release(sequence)
            return
        token, sequence.logprobs = self.choose(sequence, index)
        self.take(sequence, token)

    def take(self, sequence: Sequence, token: int, *, in_kv: bool = False) -> None:
        """The sampled token joins the reply; the sequence ends or goes on. ``in_kv``: a
        drafted token the step computed, so it is not fed again."""
        lane = sequence.lane
        end_of_turn = self.model.ends_turn(token)
        reasoning = sequence.reasoning
        if reasoning is not None and reasoning.open:
            if not end_of_turn:
                self._emit_token(sequence, token)
                reasoning.observe(self._last_text)
            if reasoning.must_close(end_of_turn):  # always true at an end of turn
                self._force(sequence, reasoning.close())
        elif end_of_turn:
            sequence.generated += 1
            self.finish(sequence, "eog")
            return
        else:
            self._emit_token(sequence, token, fed=not in_kv)
        if sequence.generated >= sequence.request.max_tokens:
            self.finish(sequence, "length")
        elif sequence.position + len(sequence.feed) >= lane.window:
            if lane is self._long_lane:
                self.finish(sequence, "length")
            else:
                sequence.moving = True

    def _logprobs(self, lane: Lane, index: int, token: int,
                  top_n: int) -> tuple[float, tuple[tuple[int, float], ...]]:
        """The token's log-probability and the ``top_n`` best, from the raw logits."""
        logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(lane.ctx, index),
                                       (self.model.vocab_size,)).astype(np.float64)
        peak = logits.max()
        log_total = peak + np.log(np.exp(logits - peak).sum())
        top: tuple[tuple[int, float], ...] = ()
        if top_n > 0:
            best = np.argpartition(-logits, top_n)[:top_n]
            best = best[np.argsort(-logits[best])]
            top = tuple((int(t), float(logits[t] - log_total)) for t in best)
        return float(logits[token] - log_total), top

    def _emit_token(self, sequence: Sequence, token: int, *, fed: bool = True) -> None:
        sequence.generated += 1
        self._last_text = sequence.decoder.decode(self.model.token_bytes(token))
        logprob, top = sequence.logprobs if sequence.logprobs else (None, ())
        sequence.logprobs = None  # a forced token after this one was not sampled: none
        self._outbox.put(sequence, TokenEvent(token=token, text=self._last_text,
                                              logprob=logprob, top=top))
        if fed:
            sequence.feed.append(token)
        sequence.reply.append(token)
        if sequence.history is not None:
            sequence.history.extend((token,))

    def _force(self, sequence: Sequence, tokens: list[int]) -> None:
        """Feed tokens the model did not choose, as if it had (they are output too)."""
        room = sequence.request.max_tokens - sequence.generated
        for token in tokens[:max(room, 0)]:
            sequence.sampler.accept(token)
            self._emit_token(sequence, token)

    def finish(self, sequence: Sequence, reason: str) -> None:
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
