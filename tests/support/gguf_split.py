"""Cut a GGUF into a split llama.cpp loads (``NAME-00001-of-0000N.gguf``), as gguf-split does.

GGUF v3: ``GGUF``, version, tensor count, key-value count, the key-values, the tensor infos
(name, dimensions, type, offset in the data section), padding to the alignment, the data.
The first part keeps every key-value; each part adds ``split.no`` and ``split.count`` (u16)
and ``split.tensors.count`` (i32) and holds a share of the tensors with their data.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _U16, _I32, _U32 = 8, 9, 2, 5, 4


@dataclass
class _Tensor:
    name: bytes
    info: bytes      # dimensions and type, as read
    offset: int


def _u64(source: BinaryIO) -> int:
    return int(struct.unpack("<Q", source.read(8))[0])


def _u32(source: BinaryIO) -> int:
    return int(struct.unpack("<I", source.read(4))[0])


def _skip_value(source: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        source.seek(_u64(source), 1)
    elif kind == _ARRAY:
        item, count = _u32(source), _u64(source)
        if item in _SIZES:
            source.seek(_SIZES[item] * count, 1)
        else:
            for _ in range(count):
                _skip_value(source, item)
    else:
        source.seek(_SIZES[kind], 1)


def _string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


def _kv(key: str, kind: int, value: int) -> bytes:
    fmt = {_U16: "<H", _I32: "<i", _U32: "<I"}[kind]
    return _string(key.encode()) + struct.pack("<I", kind) + struct.pack(fmt, value)


def _read(source: BinaryIO) -> tuple[list[bytes], list[_Tensor], int, int]:
    """The raw key-values, the tensors, the alignment and where the data section starts."""
    assert source.read(4) == b"GGUF" and _u32(source) == 3
    tensors, count = _u64(source), _u64(source)
    kvs, alignment = [], 32
    for _ in range(count):
        start = source.tell()
        key = source.read(_u64(source))
        kind = _u32(source)
        value_at = source.tell()
        _skip_value(source, kind)
        if key == b"general.alignment":
            source.seek(value_at)
            alignment = _u32(source)
        end = source.tell()
        source.seek(start)
        kvs.append(source.read(end - start))
    infos = []
    for _ in range(tensors):
        name = source.read(_u64(source))
        start = source.tell()
        dims = _u32(source)
        source.seek(8 * dims + 4, 1)
        end = source.tell()
        source.seek(start)
        infos.append(_Tensor(name, source.read(end - start), _u64(source)))
    data = -(-source.tell() // alignment) * alignment
    return kvs, infos, alignment, data


def split(gguf: Path, parts: int, folder: Path, prefix: str) -> list[Path]:
    """``gguf`` as ``parts`` files ``{prefix}-0000N-of-0000M.gguf`` in ``folder``."""
    with gguf.open("rb") as source:
        kvs, tensors, alignment, data = _read(source)
        end = gguf.stat().st_size - data
        share = -(-len(tensors) // parts)
        written = []
        for n in range(parts):
            chosen = tensors[n * share:(n + 1) * share]
            stop = tensors[(n + 1) * share].offset if (n + 1) * share < len(tensors) else end
            header = _header(kvs if n == 0 else [], chosen, n, parts, len(tensors))
            path = folder / f"{prefix}-{n + 1:05d}-of-{parts:05d}.gguf"
            with path.open("wb") as out:
                out.write(header + bytes(-len(header) % alignment))
                source.seek(data + chosen[0].offset)
                out.write(source.read(stop - chosen[0].offset))
            written.append(path)
    return written


def _header(kvs: list[bytes], tensors: list[_Tensor], n: int, parts: int, total: int) -> bytes:
    extra = [_kv("split.no", _U16, n), _kv("split.count", _U16, parts),
             _kv("split.tensors.count", _I32, total)]
    base = tensors[0].offset
    infos = [_string(t.name) + t.info + struct.pack("<Q", t.offset - base) for t in tensors]
    return (b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs) + len(extra))
            + b"".join(kvs + extra + infos))
