"""Choosing the slot for a new sequence: pure logic, no model."""

from __future__ import annotations

from b3os_infer.engine.llamacpp.lanes import Slot, pick_slot


def slot(index: int, tokens: list[int], *, busy: bool = False, used: float = 0.0) -> Slot:
    return Slot(index, list(tokens), busy=busy, last_used=used)


def test_the_free_slot_with_the_longest_shared_prefix_is_reused():
    slots = [slot(0, [1, 2, 9]), slot(1, [1, 2, 3, 4]), slot(2, [5])]
    seat = pick_slot(slots, [1, 2, 3, 4, 7], min_copy=2)
    assert (seat.slot.index, seat.shared, seat.source) == (1, 4, None)


def test_a_much_longer_running_prefix_is_copied_into_the_oldest_free_slot_beside_a_busy_one():
    # slots 0 and 2 neighbour the busy slot 1; of those, 2 is the least recently used
    slots = [slot(0, [1], used=5.0), slot(1, [1, 2, 3, 4, 5, 6], busy=True),
             slot(2, [8], used=1.0), slot(3, [9], used=0.5)]
    seat = pick_slot(slots, [1, 2, 3, 4, 5, 6, 7], min_copy=2)
    assert seat.source is slots[1]
    assert (seat.slot.index, seat.shared) == (2, 6)


def test_a_copy_goes_into_a_free_slot_next_to_a_busy_one_before_an_older_one():
    slots = [slot(0, [1, 2, 3, 4, 5, 6], busy=True), slot(1, [1], used=5.0),
             slot(2, [8], used=1.0)]
    seat = pick_slot(slots, [1, 2, 3, 4, 5, 6, 7], min_copy=2)
    assert seat.source is slots[0]
    assert (seat.slot.index, seat.shared) == (1, 6)


def test_among_slots_sharing_as_much_the_one_next_to_a_busy_slot_is_taken():
    # slots 1 and 4 hold the same prefix; 4 is the least recently used, 1 neighbours the
    # busy slot 0: sequences in neighbouring slots share a micro-batch in llama.cpp
    slots = [slot(0, [7, 7], busy=True), slot(1, [1, 2, 9], used=5.0), slot(2, [], used=3.0),
             slot(3, [], used=2.0), slot(4, [1, 2, 8], used=1.0)]
    seat = pick_slot(slots, [1, 2, 3], min_copy=2)
    assert (seat.slot.index, seat.shared, seat.source) == (1, 2, None)


def test_a_longer_shared_prefix_wins_over_a_slot_next_to_a_busy_one():
    slots = [slot(0, [7, 7], busy=True), slot(1, [1, 9]), slot(2, []), slot(3, [1, 2, 3])]
    seat = pick_slot(slots, [1, 2, 3, 4], min_copy=2)
    assert (seat.slot.index, seat.shared) == (3, 3)


def test_with_no_slot_busy_the_least_recently_used_of_equals_is_taken():
    slots = [slot(0, [], used=4.0), slot(1, [], used=2.0), slot(2, [], used=3.0)]
    assert pick_slot(slots, [1, 2], min_copy=2).slot.index == 1


def test_a_running_prefix_only_slightly_longer_is_not_worth_a_copy():
    slots = [slot(0, [1, 2, 3, 4], busy=True), slot(1, [1, 2, 3])]
    seat = pick_slot(slots, [1, 2, 3, 4, 5], min_copy=2)
    assert (seat.slot.index, seat.shared, seat.source) == (1, 3, None)
