"""Long prefixes on disk: a sequence's KV state in a file, reloaded after a restart.

One file per saved sequence, ``<sha256 of its tokens>.kv``, in a folder named after the
identity of what computed it (the model file, the KV type, the window and rope settings):

    b"B3OSKV1\\n" | header length (u32 LE) | JSON header | tokens (int32 LE) | state

The header repeats the identity and records the token count, the state's length and its
CRC-32. A file whose identity differs is never loaded; one that is truncated, corrupt or
unreadable is ignored and deleted. The folders together stay under a byte budget: the least
recently used file goes first (a load touches its mtime). Files are written by a thread of
their own, to ``*.partial`` first, so a crash never leaves half a file under a real name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import struct
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .prefix import common_prefix, token_array

log = logging.getLogger(__name__)

MAGIC = b"B3OSKV1\n"
_LENGTH = struct.Struct("<I")
_MAX_HEADER = 1 << 16


def model_identity(path: Path) -> dict[str, Any]:
    """What tells one model file from another without reading it all: its name, size and
    the SHA-256 of its first MiB (the GGUF header, metadata and the first tensors)."""
    with path.open("rb") as source:
        head = hashlib.sha256(source.read(1 << 20)).hexdigest()
    return {"model": path.name, "size": path.stat().st_size, "head_sha256": head}


@dataclass(frozen=True)
class DiskEntry:
    path: Path
    tokens: tuple[int, ...]
    # the same tokens, converted once: every admission compares its prompt with each entry
    array: npt.NDArray[np.int32] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "array", token_array(self.tokens))


class CorruptFile(Exception):
    """A file that is not a whole, valid prefix file of this identity."""


class DiskCache:
    """The saved prefixes of one identity under ``root``, within ``budget_bytes`` in all."""

    def __init__(self, root: Path, identity: dict[str, Any], budget_bytes: int,
                 min_tokens: int) -> None:
        self.root = root
        self.identity = identity
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
        self.folder = root / digest[:16]
        self.budget_bytes = budget_bytes
        self.min_tokens = min_tokens
        self._entries: dict[Path, DiskEntry] = {}
        self._lock = threading.Lock()
        self._jobs: queue.Queue[tuple[Path, bytes, Any] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self.folder.mkdir(parents=True, exist_ok=True)
        self._scan()

    # ---- what is there ------------------------------------------------------------

    def _scan(self) -> None:
        for path in sorted(self.folder.glob("*.partial")):
            path.unlink(missing_ok=True)   # a write that never finished
        for path in sorted(self.folder.glob("*.kv")):
            try:
                header, tokens, _ = _read_header(path)
                self._check_identity(header)
            except (CorruptFile, OSError) as exc:
                log.warning("prefix cache: ignoring and deleting %s: %s", path.name, exc)
                path.unlink(missing_ok=True)
                continue
            self._entries[path] = DiskEntry(path, tokens)

    def _check_identity(self, header: dict[str, Any]) -> None:
        if header.get("identity") != self.identity:
            raise CorruptFile("it was computed by another model, KV type or window")

    def entries(self) -> list[DiskEntry]:
        with self._lock:
            return list(self._entries.values())

    def longest(self, prompt: Sequence[int]) -> tuple[DiskEntry | None, int]:
        best: DiskEntry | None = None
        shared = 0
        wanted = token_array(prompt)
        for entry in self.entries():
            count = common_prefix(entry.array, wanted)
            if count > shared:
                best, shared = entry, count
        return best, shared

    def worth_saving(self, tokens: Sequence[int]) -> bool:
        """Long enough, and at least ``min_tokens`` longer than what files already cover."""
        if len(tokens) < self.min_tokens or self.budget_bytes <= 0:
            return False
        _, covered = self.longest(tokens)
        return len(tokens) - covered >= self.min_tokens

    # ---- reading ----------------------------------------------------------------------

    def read(self, entry: DiskEntry) -> bytearray | None:
        """The entry's state, checked whole; a bad file is deleted and None returned."""
        try:
            header, tokens, offset = _read_header(entry.path)
            self._check_identity(header)
            size = int(header["state_bytes"])
            if entry.path.stat().st_size != offset + size:
                raise CorruptFile("it is truncated")
            state = bytearray(size)
            with entry.path.open("rb") as source:
                source.seek(offset)
                if source.readinto(state) != size:
                    raise CorruptFile("it is truncated")
            if zlib.crc32(state) != header["crc32"] or tokens != entry.tokens:
                raise CorruptFile("its checksum does not match")
            os.utime(entry.path)   # recently used: the last to be evicted
            return state
        except (CorruptFile, OSError, KeyError, TypeError, ValueError) as exc:
            log.warning("prefix cache: ignoring and deleting %s: %s", entry.path.name, exc)
            self.forget(entry)
            return None

    def forget(self, entry: DiskEntry) -> None:
        with self._lock:
            self._entries.pop(entry.path, None)
        entry.path.unlink(missing_ok=True)

    # ---- writing ------------------------------------------------------------------------

    def save(self, tokens: Sequence[int], state: Any) -> None:
        """Write in the background: ``state`` is a buffer the caller no longer touches."""
        data = np.asarray(tokens, dtype="<i4").tobytes()   # the file's name and its tokens
        path = self.folder / f"{hashlib.sha256(data).hexdigest()}.kv"
        with self._lock:   # listed at once, so the same tokens are not queued twice
            self._entries[path] = DiskEntry(path, tuple(tokens))
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="prefix-cache-writer",
                                            daemon=True)
            self._writer.start()
        self._jobs.put((path, data, state))

    def close(self) -> None:
        """Finish the writes queued so far."""
        if self._writer is not None:
            self._jobs.put(None)
            self._writer.join()
            self._writer = None

    def _write_loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            path, tokens, state = job
            try:
                self._write(path, tokens, memoryview(state))
                self._enforce_budget(keep=path)
            except OSError as exc:
                log.warning("prefix cache: could not write %s: %s", path.name, exc)
                with self._lock:
                    self._entries.pop(path, None)

    def _write(self, path: Path, tokens: bytes, state: memoryview) -> None:
        header = json.dumps({"identity": self.identity, "tokens": len(tokens) // 4,
                             "state_bytes": state.nbytes,
                             "crc32": zlib.crc32(state)}).encode()
        partial = path.with_suffix(".partial")
        with partial.open("wb") as out:
            out.write(MAGIC + _LENGTH.pack(len(header)) + header)
            out.write(tokens)
            out.write(state)
        partial.replace(path)

    def _enforce_budget(self, keep: Path) -> None:
        """Delete the least recently used files, of any identity, until all fit."""
        files = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.root.glob("*/*.kv")]
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.budget_bytes:
                break
            if path == keep:
                continue
            path.unlink(missing_ok=True)
            with self._lock:
                self._entries.pop(path, None)
            total -= size
        if total > self.budget_bytes:   # the new file alone is over the budget
            keep.unlink(missing_ok=True)
            with self._lock:
                self._entries.pop(keep, None)


def _read_header(path: Path) -> tuple[dict[str, Any], tuple[int, ...], int]:
    """The header, the tokens and the offset where the state begins."""
    with path.open("rb") as source:
        if source.read(len(MAGIC)) != MAGIC:
            raise CorruptFile("it is not a prefix file")
        raw = source.read(_LENGTH.size)
        if len(raw) != _LENGTH.size or (length := _LENGTH.unpack(raw)[0]) > _MAX_HEADER:
            raise CorruptFile("its header is damaged")
        try:
            header = json.loads(source.read(length))
            if not isinstance(header, dict):
                raise TypeError("not an object")
            count = int(header["tokens"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFile("its header is damaged") from exc
        data = source.read(4 * count)
        if len(data) != 4 * count:
            raise CorruptFile("it is truncated")
        tokens = tuple(np.frombuffer(data, dtype="<i4").tolist())
        return header, tokens, len(MAGIC) + _LENGTH.size + length + 4 * count
