"""A sequence's KV state rewritten between V a row per cell (flash attention) and V
transposed (without it), in llama.cpp's state layout (v_layout.py)."""

from __future__ import annotations

import struct

from b3os_infer.engine.llamacpp.seq_state import MAGIC
from b3os_infer.engine.llamacpp.v_layout import relayout

F16, Q8_0 = 1, 8
CELLS, WIDTH = 2, 3     # two cells, three V elements a cell


def pack(fmt: str, *values: int) -> bytes:
    return struct.pack("<" + fmt, *values)


def k_layers() -> bytes:
    """Two layers of K: type, row bytes, a row of two f16 per cell."""
    return b"".join(pack("iQ", F16, 4) + bytes(range(10 * layer, 10 * layer + 8))
                    for layer in range(2))


def v_by_cell(layer: int) -> list[list[int]]:
    return [[100 * layer + 10 * cell + e for e in range(WIDTH)] for cell in range(CELLS)]


def state(transposed: bool, v_type: int = F16, streams: int = 2,
          ids: tuple[int, ...] = (5,)) -> bytearray:
    """One sequence in the last of ``streams`` streams, two layers; the first cell
    carries the sequence ids ``ids``, the other one id."""
    cells = pack("iI", 0, len(ids)) + pack(f"{len(ids)}i", *ids) + b"".join(
        pack("iIi", position, 1, 5) for position in range(1, CELLS))
    v = b""
    for layer in range(2):
        grid = v_by_cell(layer)
        if transposed:
            v += pack("iII", v_type, 2, WIDTH) + pack(f"{CELLS * WIDTH}H", *(
                grid[cell][e] for e in range(WIDTH) for cell in range(CELLS)))
        else:
            v += pack("iQ", v_type, 2 * WIDTH) + pack(f"{CELLS * WIDTH}H", *(
                value for row in grid for value in row))
    stream = pack("I", CELLS) + cells + pack("II", int(transposed), 2) + k_layers() + v
    return bytearray(pack("III", MAGIC, 5, streams) + pack("I", 0) * (streams - 1) + stream)


def test_v_a_row_per_cell_is_transposed_to_a_row_per_element_and_k_is_kept():
    assert relayout(state(transposed=False), transposed=True) == state(transposed=True)


def test_transposed_v_goes_back_to_a_row_per_cell():
    assert relayout(state(transposed=True), transposed=False) == state(transposed=False)


def test_a_cell_of_several_sequence_ids_is_read_past_and_rewritten():
    shared = state(transposed=False, ids=(5, 6, 7))
    assert relayout(shared, transposed=True) == state(transposed=True, ids=(5, 6, 7))


def test_a_sequence_in_the_first_of_several_streams_is_rewritten_too():
    one = state(transposed=False, streams=1)
    moved = bytearray(one[:8]) + pack("I", 3) + one[12:] + pack("I", 0) * 2
    want = state(transposed=True, streams=1)
    assert relayout(moved, transposed=True) == \
        bytearray(want[:8]) + pack("I", 3) + want[12:] + pack("I", 0) * 2


def test_a_state_already_in_the_layout_asked_is_returned_as_it_is():
    same = state(transposed=True)
    assert relayout(same, transposed=True) is same


def test_a_quantized_v_or_a_cut_state_is_not_rewritten():
    assert relayout(state(transposed=False, v_type=Q8_0), transposed=True) is None
    assert relayout(state(transposed=False)[:-3], transposed=True) is None
    assert relayout(bytearray(pack("III", MAGIC, 5, 2) + pack("II", 0, 0)), True) is None
