"""How a step chooses each sequence's draft (steps.py): in a lane with flash attention,
where one sequence would draft ``DraftControl.MAX`` tokens, every drafting sequence drafts
that many or none; without it each drafts its own length; a background sequence drafts
only a copy in progress. No model: the choice reads only the sequence's tokens, class and
limits."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from b3os_infer.engine.llamacpp.drafting import DraftControl, SharedPool
from b3os_infer.engine.llamacpp.steps import Steps

COPY = [*range(1000, 1200), *range(1000, 1040)]    # a copy in progress, 160 tokens to go
SHORT = [7, 8, 9, 50, 51, 52, 53, 7, 8, 9]         # a 3-token match: drafts 3 tokens


def _sequence(tokens: list[int], max_tokens: int = 1000,
              priority: str = "interactive") -> Any:
    return SimpleNamespace(request=SimpleNamespace(prompt=tokens, max_tokens=max_tokens,
                                                   priority=priority),
                           reply=[], generated=0, position=len(tokens), history=None,
                           lane=SimpleNamespace(window=8192))


def _decoding(tokens: list[int], slot: int, length: int) -> Any:
    """A sequence about to decode its next token, its draft length at ``length``."""
    sequence = _sequence(tokens[:-1])   # its last token sampled, not yet in the KV
    sequence.reply, sequence.feed = [tokens[-1]], [tokens[-1]]
    sequence.draft, sequence.reasoning = [], None
    sequence.slot = SimpleNamespace(index=slot, tokens=list(tokens[:-1]))
    sequence.drafts = DraftControl(length=length)
    return sequence


def _lane(flash_attention: bool) -> Any:
    rows = 600
    batch = SimpleNamespace(token=[0] * rows, pos=[0] * rows, n_seq_id=[0] * rows,
                            seq_id=[[0] for _ in range(rows)], logits=[False] * rows)
    return SimpleNamespace(batch_tokens=512, flash_attention=flash_attention, batch=batch)


def _drafts_of_a_step(flash_attention: bool) -> list[list[int]]:
    """A copy wanting a whole draft and a short match, decoded in one step."""
    copy, short = _decoding(COPY, 0, DraftControl.MAX), _decoding(SHORT, 1, 8)
    outputs: list[Any] = []
    _steps()._put_decoding(_lane(flash_attention), [copy, short], outputs)
    return [copy.draft, short.draft]


def test_with_flash_attention_a_short_match_beside_a_whole_draft_waits() -> None:
    assert _drafts_of_a_step(True) == [list(range(1040, 1040 + DraftControl.MAX)), []]


def test_without_flash_attention_each_sequence_drafts_its_own_length() -> None:
    assert _drafts_of_a_step(False) == [list(range(1040, 1040 + DraftControl.MAX)),
                                        [50, 51, 52]]


def _steps() -> Steps:
    return Steps(cast(Any, None), SharedPool(), lambda sequence: None)


def test_without_a_whole_draft_in_the_step_a_short_match_drafts_what_it_matched() -> None:
    assert _steps()._draft(_sequence(SHORT), 512, 8, whole=False) == [50, 51, 52]


def test_a_background_sequence_drafts_a_copy_but_not_a_short_match() -> None:
    steps = _steps()
    assert steps._draft(_sequence(SHORT, priority="background"), 512, 8, whole=False) == []
    assert steps._draft(_sequence(COPY, priority="background"), 512, 8, whole=False) == \
        list(range(1040, 1048))


def test_beside_a_whole_draft_a_short_match_drafts_nothing() -> None:
    assert _steps()._draft(_sequence(SHORT), 512, 8, whole=True) == []


def test_beside_a_whole_draft_a_copy_drafts_max_tokens_whatever_its_own_length() -> None:
    draft = _steps()._draft(_sequence(COPY), 512, 8, whole=True)
    assert draft == list(range(1040, 1040 + DraftControl.MAX))


def test_a_whole_draft_cut_by_max_tokens_is_still_drafted() -> None:
    sequence = _sequence(COPY, max_tokens=11)     # room for 10 more tokens after this one
    assert _steps()._draft(sequence, 512, DraftControl.MAX, whole=True) == \
        list(range(1040, 1050))


def test_a_sequence_that_wants_no_draft_gets_none_in_a_whole_step() -> None:
    assert _steps()._draft(_sequence(COPY), 512, 0, whole=True) == []
