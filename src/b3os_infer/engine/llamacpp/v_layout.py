"""A sequence's KV state rewritten for a context that lays out V the other way.

Without flash attention llama.cpp keeps V transposed (one row per embedding element, a
column per cell), with it one row per cell; a state says which (``v_trans``) and a context
loads only its own layout. Lanes may differ here (contexts.py), so a state moved between
lanes, or read from disk, is rewritten first. After the stream header (seq_state.py), one
sequence's state in a stream is: its cell count; per cell its position (i32), its sequence
count (u32) and those ids (i32 each); ``v_trans`` and the layer count (u32 each); per layer
K (type i32, row bytes u64, a row per cell); then per layer V: as K when not transposed,
else type (i32), element bytes (u32), elements per cell (u32) and a row of cells per
element. Only f16 and f32 V can be transposed. (Read from src/llama-kv-cache.cpp of the
llama.cpp vendored in llama-cpp-python 0.3.36; a state of another shape, such as one whose
cells carry more than this, is not rewritten: llama.cpp loads it only if its layout is
the context's.)
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .seq_state import sequence_span

_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_ELEMENT: dict[int, np.dtype[Any]] = {0: np.dtype("<u4"), 1: np.dtype("<u2")}  # F32, F16


class _Unreadable(Exception):
    pass


class _Reader:
    def __init__(self, data: memoryview, at: int, end: int) -> None:
        self.data, self.at, self.end = data, at, end

    def take(self, size: int) -> memoryview:
        if self.at + size > self.end:
            raise _Unreadable
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])


def relayout(state: bytearray, transposed: bool) -> bytearray | None:
    """``state`` (one sequence in one stream) with V transposed or not as asked: the
    same bytearray when it already is, None when it cannot be read or rewritten."""
    try:
        return _relayout(memoryview(state), state, transposed)
    except _Unreadable:
        return None


def _relayout(data: memoryview, state: bytearray, transposed: bool) -> bytearray:
    span = sequence_span(data)
    if span is None:
        raise _Unreadable
    _, start, end = span
    reader = _Reader(data, start, end)
    cells = reader.u32()
    flag_at = _skip_cells(reader, cells)
    v_trans, layers = reader.u32(), reader.u32()
    if v_trans not in (0, 1):
        raise _Unreadable
    if bool(v_trans) == transposed:
        return state
    for _ in range(layers):
        reader.i32()
        (row,) = _U64.unpack(reader.take(8))
        reader.take(row * cells)
    k_end = reader.at
    values = bytearray()
    while reader.at < end:
        values += _v_block(reader, cells, transposed)
    out = bytearray(data[:flag_at])
    out += _U32.pack(int(transposed)) + data[flag_at + 4:k_end] + values + data[end:]
    return out


def _skip_cells(reader: _Reader, cells: int) -> int:
    """Past the cells' positions and sequence ids; where that ends. Cells of one
    sequence id each (what a sequence's own state holds) are checked at once."""
    block = 12 * cells
    if reader.at + block <= reader.end:
        counts = np.frombuffer(reader.data[reader.at:reader.at + block], "<u4")[1::3]
        if bool(np.all(counts == 1)):
            reader.take(block)
            return reader.at
    for _ in range(cells):   # some cell with another count: walk them one by one
        reader.i32()
        reader.take(4 * reader.u32())
    return reader.at


def _v_block(reader: _Reader, cells: int, transposed: bool) -> bytes:
    """One layer's V in the other layout."""
    kind = reader.i32()
    element = _ELEMENT.get(kind)
    if element is None:
        raise _Unreadable
    if transposed:   # from a row per cell
        (row,) = _U64.unpack(reader.take(8))
        width = row // element.itemsize
        if width * element.itemsize != row:
            raise _Unreadable
        grid = np.frombuffer(reader.take(row * cells), element).reshape(cells, width)
        header = _I32.pack(kind) + _U32.pack(element.itemsize) + _U32.pack(width)
    else:            # from a row per element
        if reader.u32() != element.itemsize:
            raise _Unreadable
        width = reader.u32()
        grid = np.frombuffer(reader.take(width * cells * element.itemsize),
                             element).reshape(width, cells)
        header = _I32.pack(kind) + _U64.pack(width * element.itemsize)
    return header + np.ascontiguousarray(grid.T).tobytes()
