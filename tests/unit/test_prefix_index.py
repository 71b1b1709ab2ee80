"""The KV pool's token-prefix index: which entry a prompt starts from, parking, eviction."""

from __future__ import annotations

from b3os_infer.engine.prefix_index import PrefixIndex, common_prefix


def index_with(*parked: tuple[list[int], float], ids: int = 8) -> PrefixIndex:
    index = PrefixIndex(ids)
    for tokens, used in parked:
        entry = index.open(used)
        assert entry is not None
        entry.tokens = list(tokens)
        index.park(entry, used)
    return index


def test_common_prefix_counts_the_leading_tokens_both_share():
    assert common_prefix([1, 2, 3, 4], [1, 2, 9]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([5], [6]) == 0


def test_the_entry_sharing_the_longest_prefix_is_chosen_running_or_parked():
    index = index_with(([1, 2, 9], 1.0), ([1, 2, 3, 4], 2.0))
    running = index.open(3.0)
    assert running is not None
    running.tokens = [1, 2, 3, 4, 5, 6]
    match = index.longest([1, 2, 3, 4, 5, 7])
    assert match.entry is running and match.shared == 5
    match = index.longest([1, 2, 9, 9])
    assert match.entry is not None and match.entry.tokens == [1, 2, 9] and match.shared == 3


def test_among_equal_prefixes_the_most_recently_used_is_chosen():
    index = index_with(([1, 2, 3], 1.0), ([1, 2, 4], 5.0))
    match = index.longest([1, 2, 7])
    assert match.entry is not None and match.entry.last_used == 5.0 and match.shared == 2


def test_no_entry_shares_anything_with_a_new_prompt():
    index = index_with(([1, 2, 3], 1.0))
    assert index.longest([7, 8]).entry is None


def test_parking_removes_parked_entries_that_are_a_prefix_of_the_new_one():
    index = index_with(([1, 2], 1.0), ([1, 5], 3.0))
    entries = [index.open(4.0), index.open(4.0)]
    assert entries[0] is not None and entries[1] is not None
    entries[0].tokens, entries[1].tokens = [1, 2, 3], [1, 2, 3, 4]
    assert [e.tokens for e in index.park(entries[0], 4.0)] == [[1, 2]]
    assert [e.tokens for e in index.park(entries[1], 5.0)] == [[1, 2, 3]]
    assert sorted(e.tokens for e in index.parked()) == [[1, 2, 3, 4], [1, 5]]


def test_an_entry_that_computed_nothing_frees_its_id_when_parked():
    index = PrefixIndex(1)
    entry = index.open(0.0)
    assert entry is not None and index.open(0.0) is None
    assert index.park(entry, 1.0) == []
    assert index.entries() == [] and index.open(2.0) is not None


def test_ids_run_out_and_removing_the_least_recently_used_frees_one():
    index = index_with(([1], 3.0), ([2], 1.0), ([3], 2.0), ids=3)
    assert index.open(4.0) is None
    oldest = index.least_recently_used()
    assert oldest is not None and oldest.tokens == [2]
    index.remove(oldest)
    fresh = index.open(5.0)
    assert fresh is not None and fresh.seq_id == oldest.seq_id and fresh.running


def test_running_entries_are_never_offered_for_eviction():
    index = PrefixIndex(2)
    running = index.open(0.0)
    assert running is not None
    running.tokens = [1, 2]
    assert index.least_recently_used() is None
    assert index.cached_tokens() == 0
