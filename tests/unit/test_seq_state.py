"""Moving one sequence's KV state between contexts with different stream counts."""

from __future__ import annotations

import struct

from b3os_infer.engine.llamacpp.seq_state import MAGIC, restream


def u32(*values: int) -> bytes:
    return b"".join(struct.pack("<I", v) for v in values)


def state(streams: int, *rest: bytes) -> bytes:
    """llama.cpp's layout: magic, the sequence id, the stream count, then the streams."""
    return u32(MAGIC, 5, streams) + b"".join(rest)


CELLS = u32(3) + b"positions and K/V data"   # a cell count, then what follows it


def test_a_sequence_in_stream_two_of_four_moves_into_a_single_stream_context():
    assert restream(state(4, u32(0, 0), CELLS, u32(0)), 1) == state(1, CELLS)


def test_a_single_stream_state_moves_into_the_last_stream_of_an_eight_stream_context():
    assert restream(state(1, CELLS), 8) == state(8, u32(0) * 7, CELLS)


def test_the_same_stream_count_is_left_as_it_is():
    same = state(2, u32(0), CELLS)
    assert restream(same, 2) == same


def test_states_that_are_not_one_sequence_in_one_stream_are_not_moved():
    assert restream(state(3, u32(0, 0, 0)), 1) is None        # no cells at all
    assert restream(state(2, CELLS, CELLS[:-1] + b"x"), 1) is None   # cells in two streams
    assert restream(u32(1234, 5, 1) + CELLS, 2) is None        # not llama.cpp's magic
    assert restream(b"\x01", 1) is None                        # not even a header
