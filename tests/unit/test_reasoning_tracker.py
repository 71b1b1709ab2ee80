"""The engines' reasoning tracker when the model decides whether to reason (a budget with a
``start_marker``): the section opens only on a reply that starts with the marker."""

from __future__ import annotations

from b3os_infer.engine.base import ReasoningBudget
from b3os_infer.engine.reasoning import ReasoningTracker


def decides(budget: int = 100) -> ReasoningTracker:
    return ReasoningTracker(ReasoningBudget(budget, "</think>", [7, 8], start_marker="<think>"))


def test_a_reply_that_answers_straight_away_is_never_closed_by_the_engine():
    tracker = decides(budget=2)
    for piece in ["Hel", "lo", " there", "."]:
        assert tracker.observe(piece) is None
    assert not tracker.open and not tracker.must_close(end_of_turn=True)


def test_a_reply_that_starts_with_the_marker_opens_a_section_with_its_budget():
    tracker = decides(budget=3)
    assert tracker.observe("\n<th") is None and not tracker.open
    assert tracker.observe("ink>") is None and tracker.open
    tracker.observe(" a")
    tracker.observe(" b")
    assert tracker.must_close()
    assert tracker.close() == [7, 8] and not tracker.open


def test_a_section_opened_and_ended_in_one_piece_reports_where_the_reply_starts():
    tracker = decides()
    piece = "<think>hm</think>Hi"
    assert tracker.observe(piece) == piece.index("Hi")
    assert not tracker.open and not tracker.must_close(end_of_turn=True)


def test_a_budget_without_a_start_marker_starts_inside_the_section():
    tracker = ReasoningTracker(ReasoningBudget(1, "</think>", [7]))
    assert tracker.open and tracker.must_close(end_of_turn=True)
