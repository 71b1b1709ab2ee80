"""Drafts from n-grams (engine/llamacpp/drafting.py): what is proposed, and how the draft
length and the pauses follow acceptance."""

from __future__ import annotations

from b3os_infer.engine.llamacpp.drafting import (
    KEY,
    REACH,
    DraftControl,
    NgramIndex,
    SharedPool,
    draft_for,
)

FILE = list(range(100, 160))   # a "file" of 60 distinct tokens


def test_a_reply_copying_its_prompt_drafts_the_rest_of_the_copied_text():
    history = NgramIndex([1, 2, *FILE, 3, 4, *FILE[:10]])
    assert draft_for(history, None, 8) == FILE[10:18]


def test_the_occurrence_with_the_longest_match_wins_over_a_more_recent_one():
    # 7 8 9 is followed by 50 where 5 6 7 8 9 came before it, by 60 after 0 7 8 9
    history = NgramIndex([5, 6, 7, 8, 9, 50, 51, 0, 7, 8, 9, 60, 61, 5, 6, 7, 8, 9])
    assert draft_for(history, None, 2) == [50, 51]


def test_a_short_match_drafts_no_more_tokens_than_it_matched():
    history = NgramIndex([1, 2, 3, *FILE, 9, 1, 2, 3])
    assert draft_for(history, None, 16) == FILE[:KEY]


def test_a_match_reaching_back_the_whole_reach_drafts_as_far_as_the_limit_allows():
    long_file = list(range(1000, 1200))
    history = NgramIndex([1, *long_file, 2, *long_file[:REACH]])
    assert draft_for(history, None, 100) == long_file[REACH:REACH + 100]


def test_copies_only_drafts_a_copy_in_progress_and_nothing_for_a_short_match():
    long_file = list(range(1000, 1200))
    copying = NgramIndex([1, *long_file, 2, *long_file[:REACH]])
    assert draft_for(copying, None, 8, copies_only=True) == long_file[REACH:REACH + 8]
    assert draft_for(NgramIndex([1, 2, 3, *FILE, 9, 1, 2, 3]), None, 16,
                     copies_only=True) == []


def test_the_n_gram_that_ends_the_sequence_is_no_draft_of_itself():
    assert draft_for(NgramIndex([1, 2, 3, 4, 5]), None, 4) == []


def test_tokens_added_one_by_one_are_indexed_as_tokens_added_at_once():
    grown = NgramIndex(FILE[:5])
    for token in [*FILE[5:], 7, *FILE[:20]]:
        grown.extend([token])
    assert draft_for(grown, None, 8) == draft_for(
        NgramIndex([*FILE, 7, *FILE[:20]]), None, 8) == FILE[20:28]


def test_the_shared_pool_drafts_what_another_request_wrote():
    pool = SharedPool()
    pool.add(FILE)
    own = NgramIndex([1, 2, *FILE[:12]])
    assert draft_for(own, pool, 6) == FILE[12:18]
    assert draft_for(own, None, 6) == []


def test_the_shared_pool_never_drafts_across_two_replies():
    pool = SharedPool()
    pool.add([10, 11, 12, 13])
    pool.add([90, 91, 92, 93])
    assert draft_for(NgramIndex([0, 10, 11, 12, 13]), pool, 4) == []


def test_a_full_pool_keeps_the_newer_replies():
    pool = SharedPool(capacity=100)
    old, new = list(range(1000, 1060)), list(range(2000, 2060))
    pool.add(old)
    pool.add(new)
    assert draft_for(NgramIndex(new[:10]), pool, 4) == new[10:14]
    assert draft_for(NgramIndex(old[:10]), pool, 4) == []
    assert len(pool._index) <= 100


def test_the_draft_length_doubles_while_drafts_are_accepted_whole_and_falls_after_a_miss():
    control = DraftControl()
    lengths = []
    for _ in range(5):
        lengths.append(control.wanted(tiled=True))
        control.record(lengths[-1], lengths[-1])
    # 32 is past WHOLE_FROM: drafted as MAX (64 rows of one sequence: the tiled kernel)
    assert lengths == [8, 16, 64, 64, 64] and DraftControl.MAX == 64
    control.record(64, 5)
    assert control.wanted(tiled=True) == 5
    control.record(5, 1)
    assert control.wanted(tiled=True) == DraftControl.MIN


def test_without_flash_attention_the_length_is_drafted_as_it_is():
    control = DraftControl()
    lengths = []
    for _ in range(5):
        lengths.append(control.wanted(tiled=False))
        control.record(lengths[-1], lengths[-1])
    assert lengths == [8, 16, 32, 64, 64]
    control.record(64, DraftControl.WHOLE_FROM)
    assert control.wanted(tiled=False) == DraftControl.WHOLE_FROM


def test_a_draft_falling_to_a_length_past_whole_from_is_drafted_whole():
    control = DraftControl()
    control.record(8, 8)
    control.record(16, 16)
    control.record(64, DraftControl.WHOLE_FROM)
    assert control.wanted(tiled=True) == DraftControl.MAX
    control.record(64, DraftControl.WHOLE_FROM - 1)
    assert control.wanted(tiled=True) == DraftControl.WHOLE_FROM - 1


def test_drafts_that_keep_failing_pause_drafting_and_the_pause_grows():
    control = DraftControl()
    for _ in range(DraftControl.PATIENCE):
        control.record(control.wanted(tiled=True), 0)
    paused = [control.wanted(tiled=True) for _ in range(DraftControl.FIRST_PAUSE)]
    assert paused == [0] * DraftControl.FIRST_PAUSE
    assert control.wanted(tiled=True) > 0
    for _ in range(DraftControl.PATIENCE):
        control.record(2, 0)
    assert [control.wanted(tiled=True) for _ in range(2 * DraftControl.FIRST_PAUSE)] == \
        [0] * (2 * DraftControl.FIRST_PAUSE)
    assert control.wanted(tiled=True) > 0
    assert (control.drafted, control.accepted) == (8 + 2 + 2 + 6, 0)
