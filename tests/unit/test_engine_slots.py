"""Choosing the slot for a new sequence: pure logic, no model."""

from __future__ import annotations

from b3os_infer.engine.llamacpp.lanes import Slot, pick_slot


def slot(index: int, tokens: list[int], *, busy: bool = False, used: float = 0.0) -> Slot:
    return Slot(index, list(tokens), busy=busy, last_used=used)


def test_the_free_slot_with_the_longest_shared_prefix_is_reused():
    slots = [slot(0, [1, 2, 9]), slot(1, [1, 2, 3, 4]), slot(2, [5])]
    seat = pick_slot(slots, [1, 2, 3, 4, 7], min_copy=2)
    assert (seat.slot.index, seat.shared, seat.source) == (1, 4, None)


def test_a_running_sequence_with_a_much_longer_prefix_is_copied_into_the_oldest_free_slot():
    slots = [slot(0, [1, 2, 3, 4, 5, 6], busy=True), slot(1, [1], used=5.0),
             slot(2, [8], used=1.0)]
    seat = pick_slot(slots, [1, 2, 3, 4, 5, 6, 7], min_copy=2)
    assert seat.source is slots[0]
    assert (seat.slot.index, seat.shared) == (2, 6)


def test_a_running_prefix_only_slightly_longer_is_not_worth_a_copy():
    slots = [slot(0, [1, 2, 3, 4], busy=True), slot(1, [1, 2, 3])]
    seat = pick_slot(slots, [1, 2, 3, 4, 5], min_copy=2)
    assert (seat.slot.index, seat.shared, seat.source) == (1, 3, None)
