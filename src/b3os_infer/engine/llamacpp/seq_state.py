"""A sequence's KV state, moved between llama.cpp contexts with different stream counts.

``llama_state_seq_get_data`` writes a magic number and the sequence id (a u32 each), the
context's stream count (a u32), then per stream the
number of cells the sequence has there (a u32) and, when not zero, those cells' positions and
K/V data. A sequence lives in one stream, so every other count is zero. Loading checks the
stream count against the loading context's and puts the cells into the destination
sequence's own stream whatever their index was, so the same cells load into a context
with another number of streams once the count and the empty streams around them are
rewritten. (Read from src/llama-kv-cache.cpp of the llama.cpp vendored in
llama-cpp-python 0.3.36; a state llama.cpp then refuses is simply not loaded.)
"""

from __future__ import annotations

import struct

_U32 = struct.Struct("<I")
_EMPTY = _U32.pack(0)
MAGIC = 0xAF143CD8
_PREFIX = 8   # the magic and the sequence id the state was taken from


def sequence_span(state: bytes | bytearray | memoryview) -> tuple[int, int, int] | None:
    """Where the one sequence's stream lies in ``state``: the stream count, the offset of
    that stream's cell count and the end of its cells (the empty streams' zero counts
    around it excluded); None when the state is not one sequence in one stream."""
    if len(state) < _PREFIX + _U32.size or _U32.unpack_from(state)[0] != MAGIC:
        return None
    (count,) = _U32.unpack_from(state, _PREFIX)
    head = _PREFIX + _U32.size
    leading = 0
    while leading < count and state[head + 4 * leading:head + 4 * leading + 4] == _EMPTY:
        leading += 1
    trailing = count - leading - 1
    if trailing < 0:
        return None   # every stream empty
    start = head + 4 * leading
    end = len(state) - 4 * trailing
    if end <= start + 4 or any(
            state[end + 4 * i:end + 4 * i + 4] != _EMPTY for i in range(trailing)):
        return None
    return count, start, end


def restream(state: bytes | bytearray, streams: int) -> bytearray | None:
    """The state rewritten for a context of ``streams`` KV streams (a bytearray state that
    already has that many is returned as it is); None when it is not one sequence's state
    in one stream (nothing to move, or not this layout). A state runs to hundreds of MB and
    this runs on the scheduler thread: the cells are copied once."""
    span = sequence_span(state) if streams >= 1 else None
    if span is None:
        return None
    count, start, end = span
    if count == streams:
        return state if isinstance(state, bytearray) else bytearray(state)
    moved = bytearray(state[:_PREFIX])
    moved += _U32.pack(streams) + _EMPTY * (streams - 1)
    moved += memoryview(state)[start:end]
    return moved
