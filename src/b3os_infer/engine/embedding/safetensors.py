"""Reading a ``.safetensors`` file into numpy arrays, without the safetensors package.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the raw little-endian data. The file is memory-mapped:
a tensor's bytes are read only when it is used.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
           "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8}
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """The file is not a safetensors file we can read; the message says why."""


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the file by name (``__metadata__`` left out), as read-only arrays."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if raw.size < 8:
        raise SafetensorsError(f"{path}: too short for a safetensors header")
    (length,) = struct.unpack("<Q", raw[:8].tobytes())
    if length > min(_MAX_HEADER, raw.size - 8):
        raise SafetensorsError(f"{path}: header length {length} is past the end of the file")
    try:
        header = json.loads(raw[8:8 + length].tobytes())
    except ValueError as exc:
        raise SafetensorsError(f"{path}: the header is not JSON ({exc})") from exc
    data = raw[8 + length:]
    return {name: _tensor(path, name, spec, data)
            for name, spec in header.items() if name != "__metadata__"}


def _tensor(path: Path, name: str, spec: dict[str, object], data: np.ndarray) -> np.ndarray:
    dtype = _DTYPES.get(str(spec.get("dtype")))
    if dtype is None:
        raise SafetensorsError(f"{path}: {name} has dtype {spec.get('dtype')}, not one we read")
    offsets, dims = spec.get("data_offsets"), spec.get("shape")
    if not (isinstance(offsets, list) and len(offsets) == 2 and isinstance(dims, list)):
        raise SafetensorsError(f"{path}: {name} has no data_offsets and shape")
    start, end = int(offsets[0]), int(offsets[1])
    shape = tuple(int(d) for d in dims)
    count = int(np.prod(shape, dtype=np.int64))
    if not 0 <= start <= end <= data.size or end - start != count * np.dtype(dtype).itemsize:
        raise SafetensorsError(f"{path}: {name}'s bytes do not match its shape")
    tensor: np.ndarray = data[start:end].view(dtype).reshape(shape)
    return tensor
