"""Embedding vectors in the number types a client may ask for.

- ``float``: the model's float32 values;
- ``int8``: each vector scaled so its largest component is +-127, then rounded (a
  per-vector scale keeps each vector's direction, so cosine similarity is kept to within
  the rounding);
- ``uint8``: the ``int8`` values plus 128, in 0..255;
- ``ubinary``: one bit per dimension (1 where the component is positive), packed eight to
  a byte, most significant bit first, as 0..255;
- ``binary``: the same bytes minus 128, as -128..127.

The packed types have a length of dimensions / 8; they need a dimension count that is a
multiple of 8.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

VectorType = Literal["float", "int8", "uint8", "binary", "ubinary"]
PACKED: frozenset[VectorType] = frozenset({"binary", "ubinary"})


def convert(vectors: np.ndarray, kind: VectorType) -> np.ndarray:
    """Rows of float32 vectors as ``kind``: float32, int8 or uint8 arrays."""
    if kind == "float":
        floats: np.ndarray = vectors.astype(np.float32)
        return floats
    if kind in PACKED:
        bits: np.ndarray = np.packbits(vectors > 0, axis=1)
        return bits if kind == "ubinary" else (bits.astype(np.int16) - 128).astype(np.int8)
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    scaled = np.rint(vectors / np.maximum(peak, 1e-12) * 127).astype(np.int16)
    signed: np.ndarray = scaled.astype(np.int8)
    return signed if kind == "int8" else (scaled + 128).astype(np.uint8)

