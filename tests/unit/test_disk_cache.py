"""Prefixes on disk without a model: saved, found again, bounded, and never trusted blindly."""

from __future__ import annotations

import os
from pathlib import Path

from b3os_infer.engine.llamacpp.disk_cache import DiskCache, model_identity

IDENTITY = {"model": "m.gguf", "size": 10, "head_sha256": "ab", "kv_type": "f16",
            "window": 4096}


def cache(root: Path, *, budget: int = 1 << 20, identity: dict | None = None) -> DiskCache:
    return DiskCache(root, identity or IDENTITY, budget, min_tokens=4)


def saved(root: Path, tokens: list[int], state: bytes) -> Path:
    disk = cache(root)
    disk.save(tokens, bytearray(state))
    disk.close()
    [entry] = [e for e in disk.entries() if list(e.tokens) == tokens]
    return entry.path


def test_a_saved_prefix_is_found_and_read_back_by_a_new_cache(tmp_path):
    saved(tmp_path, [1, 2, 3, 4, 5], b"state bytes")
    again = cache(tmp_path)
    entry, shared = again.longest([1, 2, 3, 4, 5, 6, 7])
    assert entry is not None and shared == 5
    assert again.read(entry) == b"state bytes"


def test_a_truncated_file_is_ignored_and_deleted_on_read(tmp_path):
    path = saved(tmp_path, [1, 2, 3, 4, 5], b"x" * 100)
    again = cache(tmp_path)
    [entry] = again.entries()
    path.write_bytes(path.read_bytes()[:-10])
    assert again.read(entry) is None
    assert not path.exists() and again.entries() == []


def test_a_file_truncated_inside_its_tokens_is_deleted_when_the_cache_starts(tmp_path):
    path = saved(tmp_path, list(range(50)), b"x" * 100)
    path.write_bytes(path.read_bytes()[:60])
    assert cache(tmp_path).entries() == [] and not path.exists()


def test_a_corrupt_state_fails_its_checksum_and_is_deleted(tmp_path):
    path = saved(tmp_path, [1, 2, 3, 4, 5], b"x" * 100)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    again = cache(tmp_path)
    [entry] = again.entries()
    assert again.read(entry) is None and not path.exists()


def test_garbage_and_half_written_files_are_deleted_when_the_cache_starts(tmp_path):
    folder = cache(tmp_path).folder
    (folder / "junk.kv").write_bytes(b"not a prefix file at all")
    (folder / "bad-header.kv").write_bytes(b"B3OSKV1\n\x05\x00\x00\x00[1,2]")
    (folder / "half.partial").write_bytes(b"B3OSKV1\n")
    assert cache(tmp_path).entries() == []
    assert sorted(folder.iterdir()) == []


def test_another_identity_never_sees_the_files_and_a_misplaced_one_is_deleted(tmp_path):
    path = saved(tmp_path, [1, 2, 3, 4, 5], b"state")
    other = cache(tmp_path, identity={**IDENTITY, "kv_type": "q8_0"})
    assert other.entries() == [] and other.longest([1, 2, 3, 4, 5])[0] is None
    misplaced = other.folder / path.name
    misplaced.write_bytes(path.read_bytes())
    assert cache(tmp_path, identity={**IDENTITY, "kv_type": "q8_0"}).entries() == []
    assert not misplaced.exists() and path.exists()


def test_the_least_recently_used_files_go_first_when_over_the_budget(tmp_path):
    disk = cache(tmp_path, budget=2500)
    for n, start in enumerate((10, 20, 30)):
        disk.save(list(range(start, start + 5)), bytearray(1000))
        disk.close()
        for entry in disk.entries():   # older files: older mtimes
            if entry.tokens[0] == start:
                os.utime(entry.path, (1000 + n, 1000 + n))
    assert sorted(e.tokens[0] for e in cache(tmp_path, budget=2500).entries()) == [20, 30]


def test_a_read_makes_a_file_the_last_to_go(tmp_path):
    disk = cache(tmp_path, budget=2500)
    for n, start in enumerate((10, 20)):
        disk.save(list(range(start, start + 5)), bytearray(1000))
        disk.close()
        for entry in disk.entries():
            if entry.tokens[0] == start:
                os.utime(entry.path, (1000 + n, 1000 + n))
    [first] = [e for e in disk.entries() if e.tokens[0] == 10]
    assert disk.read(first) is not None
    disk.save(list(range(30, 35)), bytearray(1000))
    disk.close()
    assert sorted(e.tokens[0] for e in cache(tmp_path, budget=2500).entries()) == [10, 30]


def test_only_prefixes_with_enough_new_tokens_are_worth_a_file(tmp_path):
    disk = cache(tmp_path)
    assert not disk.worth_saving([1, 2, 3])                 # shorter than min_tokens
    assert disk.worth_saving([1, 2, 3, 4, 5])
    disk.save([1, 2, 3, 4, 5], bytearray(b"s"))
    disk.close()
    assert not disk.worth_saving([1, 2, 3, 4, 5, 6, 7])     # 2 tokens beyond the file
    assert disk.worth_saving([1, 2, 3, 4, 5, 6, 7, 8, 9])


def test_the_model_identity_tells_files_of_equal_size_apart(tmp_path):
    one, two = tmp_path / "a.gguf", tmp_path / "b.gguf"
    one.write_bytes(b"GGUF" + b"\x01" * 100)
    two.write_bytes(b"GGUF" + b"\x02" * 100)
    first, second = model_identity(one), model_identity(two)
    assert first["size"] == second["size"] and first["head_sha256"] != second["head_sha256"]
