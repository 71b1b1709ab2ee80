"""One step of a lane: its batch (each decoding sequence's next token and draft, then prompt
chunks), the decode, and the sampling of every row that ends a sequence's tokens, drafted
rows verified in order (speculative decoding without a draft model: drafting.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import llama_cpp as ll

from .drafting import DraftControl, NgramIndex, SharedPool, draft_for
from .lanes import Lane
from .precedence import PromptBudget, is_interactive
from .sampling import Replies
from .sequence import Sequence


class Steps:
    """Decodes lanes; ``pool``: recent replies to draft from (None: no drafts)."""

    def __init__(self, replies: Replies, pool: SharedPool | None,
                 release: Callable[[Sequence], None]) -> None:
        self._replies = replies
        self._pool = pool
        self._release = release
        self.drafted_tokens = 0    # since start, for /metrics
        self.accepted_tokens = 0

    def step(self, lane: Lane, members: list[Sequence]) -> None:
        """One decode in a lane: every sequence's next token (with its draft), then prompt
        chunks in what is left."""
        outputs: list[tuple[Sequence, int]] = []
        n, budget = self._put_decoding(lane, members, outputs)
        n = _put_prompts(lane, members, n, budget, outputs)
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
                self._replies.sample(sequence, index)

    def _put_decoding(self, lane: Lane, members: list[Sequence],
                      outputs: list[tuple[Sequence, int]]) -> tuple[int, int]:
        """Each decoding sequence's one token and its draft into the batch; the drafts
        come out of the step's token budget. Returns the rows used and the budget left."""
        decoding = [sequence for sequence in members if len(sequence.feed) == 1]
        tiled = lane.flash_attention
        wanted = [self._wanted(sequence, tiled) for sequence in decoding]
        whole = tiled and any(length >= DraftControl.MAX for length in wanted)
        n = 0
        budget = lane.batch_tokens
        for sequence, length in zip(decoding, wanted, strict=True):
            sequence.draft = self._draft(sequence, budget, length, whole)
            budget -= len(sequence.draft)
            n = _put(lane, n, sequence, 1)
            outputs.append((sequence, n - 1 - len(sequence.draft)))
        return n, budget

    def _wanted(self, sequence: Sequence, tiled: bool) -> int:
        """How many tokens the sequence would draft this step (none while reasoning: a
        forced close would leave drafted tokens sampled for a text that is not the
        reply's); ``tiled``: its lane's flash attention makes 64 rows cheaper a row."""
        reasoning = sequence.reasoning
        if self._pool is None or (reasoning is not None and (reasoning.open or
                                                             reasoning.waiting)):
            return 0
        return sequence.drafts.wanted(tiled=tiled)

    def _draft(self, sequence: Sequence, budget: int, wanted: int, whole: bool) -> list[int]:
        """The tokens the sequence drafts this step, within the step's budget, its
        max_tokens and its lane's window. ``whole``: in a lane with flash attention, a
        sequence of the step (this one or another) wants ``DraftControl.MAX``; then each
        that drafts drafts that many or none (a shorter draft would cut a long one's rows
        into micro-batches of fewer rows, and costs more a row: DraftControl)."""
        room = min(budget, sequence.request.max_tokens - sequence.generated - 1,
                   sequence.lane.window - sequence.position - 2)
        if room <= 0 or wanted <= 0:
            return []
        if sequence.history is None:
            sequence.history = NgramIndex([*sequence.request.prompt, *sequence.reply])
        limit = min(DraftControl.MAX if whole else wanted, room)
        draft = draft_for(sequence.history, self._pool, limit,
                          copies_only=not is_interactive(sequence))
        return draft if not whole or len(draft) == limit else []

    def _verify(self, sequence: Sequence, row: int) -> None:
        """Sample the rows of a drafted step in order while the sampled token is the
        drafted one; the first that differs (or the row after the whole draft) gives one
        more token. Every token taken was sampled from the model's own distribution at
        its place, so the reply is what decoding one token a step gives. The KV of the
        drafted tokens not taken is dropped."""
        draft, sequence.draft = sequence.draft, []
        if sequence.cancelled:
            self._release(sequence)
            return
        replies = self._replies
        chosen: list[tuple[int, Any]] = []
        for offset in range(len(draft) + 1):
            token, logprobs = replies.choose(sequence, row + offset)
            chosen.append((token, logprobs))
            if offset == len(draft) or token != draft[offset] or \
                    replies.model.ends_turn(token):
                break
        accepted = len(chosen) - 1
        sequence.drafts.record(len(draft), accepted)
        self.drafted_tokens += len(draft)
        self.accepted_tokens += accepted
        _keep(sequence, len(draft) - accepted, row + accepted)
        for offset, (token, logprobs) in enumerate(chosen):
            sequence.logprobs = logprobs
            replies.take(sequence, token, in_kv=offset < accepted)
            if sequence.slot is None:    # it ended
                return


def _put_prompts(lane: Lane, members: list[Sequence], n: int, budget: int,
                 outputs: list[tuple[Sequence, int]]) -> int:
    """Prompt chunks into what is left of the batch (``budget``), in the members' order
    (interactive first) and background ones within their share (precedence.py); a prompt
    that ends here samples."""
    prompts = PromptBudget(budget)
    for sequence in members:
        if len(sequence.feed) <= 1:
            continue
        take = prompts.grant(sequence, len(sequence.feed))
        if take == 0:
            continue
        n = _put(lane, n, sequence, take)
        if sequence.progress is not None:
            sequence.progress.advance(take)
        if not sequence.feed:
            outputs.append((sequence, n - 1))
            if sequence.progress is not None:
                sequence.progress.finish()
                sequence.progress = None
    return n


def _put(lane: Lane, n: int, sequence: Sequence, count: int) -> int:
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


def _keep(sequence: Sequence, dropped: int, row: int) -> None:
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
