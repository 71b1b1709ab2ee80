"""Moving a file's bytes: resumable with HTTP ranges, hashed, checked, then renamed.

Bytes go to ``FILE.partial``; a transfer cut short leaves it, and the next one asks for the
rest (``Range: bytes=N-``) and hashes what is already there first. The file gets its name
only when its size and SHA-256 are the Hub's; a mismatch deletes it.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from . import HubError, Interrupted
from .refs import RemoteFile

_BLOCK = 1 << 20
# told the bytes of the model there so far and its total
Progress = Callable[[int, int], None]
# the free bytes of the file system that holds a folder
FreeSpace = Callable[[Path], int]
# headroom kept free beside a download (the record, the file system's own needs)
MARGIN = 64 << 20


def disk_free(folder: Path) -> int:
    return shutil.disk_usage(folder).free


def check_space(needed: int, folder: Path, free_space: FreeSpace = disk_free) -> None:
    """HubError when ``needed`` bytes (and a margin) do not fit where ``folder`` is (or will
    be: its nearest existing parent is asked)."""
    existing = next(p for p in (folder, *folder.parents) if p.is_dir())
    free = free_space(existing)
    if needed + MARGIN > free:
        raise HubError(f"not enough disk space in {folder}: the download needs "
                       f"{needed / 1e9:.2f} GB more and {free / 1e9:.2f} GB are free; "
                       "free some space (or set B3OS_INFER_HOME elsewhere) and try again")


def hash_prefix(path: Path) -> tuple[int, hashlib._Hash]:
    """The size of what ``path`` holds already and the SHA-256 state after it."""
    digest = hashlib.sha256()
    if not path.is_file():
        return 0, digest
    with path.open("rb") as source:
        while block := source.read(_BLOCK):
            digest.update(block)
    return path.stat().st_size, digest


def hash_file(path: Path) -> str:
    return hash_prefix(path)[1].hexdigest()


def fetch(client: httpx.Client, url: str, headers: Mapping[str, str], file: RemoteFile,
          target: Path, progress: Callable[[int], None]) -> None:
    """``url``'s bytes into ``target`` by way of ``target.partial``, resumed if one is there."""
    partial = target.with_name(target.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    done, digest = hash_prefix(partial)
    if done > file.size:
        partial.unlink()
        done, digest = 0, hashlib.sha256()
    if done < file.size:
        done, digest = _stream(client, url, headers, partial, done, digest, progress)
    _verify(file, done, digest.hexdigest(), partial)
    partial.replace(target)


def _stream(client: httpx.Client, url: str, headers: Mapping[str, str], partial: Path,
            done: int, digest: hashlib._Hash,
            progress: Callable[[int], None]) -> tuple[int, hashlib._Hash]:
    asked = {**headers, "Range": f"bytes={done}-"} if done else dict(headers)
    with client.stream("GET", url, headers=asked) as response:
        _check_status(response, url)
        if response.status_code != 206 and done:   # the server sent it all again
            done, digest, mode = 0, hashlib.sha256(), "wb"
        else:
            mode = "ab"
        with partial.open(mode) as out:
            for block in response.iter_bytes():
                out.write(block)
                digest.update(block)
                done += len(block)
                progress(done)
    return done, digest


def _check_status(response: httpx.Response, url: str) -> None:
    if response.status_code in (200, 206):
        return
    raise Interrupted(f"the download answered HTTP {response.status_code}")


def _verify(file: RemoteFile, size: int, sha256: str, partial: Path) -> None:
    if size == file.size and sha256 == file.sha256:
        return
    partial.unlink(missing_ok=True)
    if size != file.size:
        raise HubError(f"{file.path}: received {size:,} bytes, the Hub lists {file.size:,}; "
                       "the download was deleted, try again")
    raise HubError(f"{file.path}: SHA-256 mismatch, got {sha256}, the Hub lists "
                   f"{file.sha256}; the download was deleted, try again")
