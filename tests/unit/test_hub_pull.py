"""Pulling from a Hub on 127.0.0.1 (tests/support/hub_server.py) through huggingface_hub:
what gets installed, what is checked, and that a failure leaves nothing installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from b3os_infer.hub import HubError
from b3os_infer.hub.pull import Hub, Puller
from b3os_infer.hub.pulled import Store
from b3os_infer.hub.refs import parse
from support.hub_server import HubFile, HubRepo, LocalHub, local_hub

SPLIT = [f"Tiny-Q8_0-0000{n}-of-00003.gguf" for n in (1, 2, 3)]


@pytest.fixture
def blobs(tmp_path: Path) -> dict[str, Path]:
    made = {}
    for n, name in enumerate(["Tiny-Q4_K_M.gguf", "Tiny-F16.gguf", *SPLIT]):
        made[name] = tmp_path / "blobs" / name
        made[name].parent.mkdir(exist_ok=True)
        made[name].write_bytes(b"GGUF" + bytes([n]) * (300_000 + n * 1000))
    return made


def repo(blobs: dict[str, Path], **options: object) -> HubRepo:
    return HubRepo({name: HubFile(path) for name, path in blobs.items()}, **options)  # type: ignore[arg-type]


@pytest.fixture
def hub(blobs: dict[str, Path]) -> Iterator[LocalHub]:
    with local_hub({"tiny/Tiny-GGUF": repo(blobs),
                    "tiny/Gated-GGUF": repo(blobs, gated=True, granted=("hf_granted",))}) as h:
        yield h


def puller(hub: LocalHub, models: Path, token: str | None = None,
           free: int = 1 << 40) -> Puller:
    return Puller(Hub(endpoint=hub.url, offline=False, token=token,
                      free_space=lambda _: free), Store(models))


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_add_without_a_tag_installs_the_q4_k_m_checked_and_recorded(
        hub: LocalHub, tmp_path: Path, blobs: dict[str, Path]) -> None:
    record, downloaded = puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Tiny-GGUF"))
    assert downloaded and record.name == "hf.co/tiny/Tiny-GGUF:Q4_K_M"
    assert record.state == "installed" and record.revision == HubRepo({}).commit
    installed = tmp_path / "models" / "hf.co" / "tiny" / "Tiny-GGUF"
    assert files_under(installed) == [".b3os/Q4_K_M.json", "Tiny-Q4_K_M.gguf"]
    assert (installed / "Tiny-Q4_K_M.gguf").read_bytes() == blobs["Tiny-Q4_K_M.gguf"].read_bytes()
    # the file list came with its LFS metadata; the bytes through the Hub's redirect
    assert [(s.method, s.path.split("/")[1]) for s in hub.seen] == [
        ("GET", "api"), ("HEAD", "tiny"), ("GET", "cdn")]


def test_add_of_a_split_gguf_downloads_every_part_and_checks_each(
        hub: LocalHub, tmp_path: Path, blobs: dict[str, Path]) -> None:
    record, _ = puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Tiny-GGUF:q8_0"))
    assert record.name == "hf.co/tiny/Tiny-GGUF:Q8_0"
    assert [f.path for f in record.files] == SPLIT
    store = Store(tmp_path / "models")
    assert store.first(record).name == SPLIT[0]
    for name in SPLIT:
        assert store.path(record.repo, name).read_bytes() == blobs[name].read_bytes()


def test_a_second_add_downloads_nothing(hub: LocalHub, tmp_path: Path) -> None:
    pull = puller(hub, tmp_path / "models")
    pull.add(parse("hf.co/tiny/Tiny-GGUF:F16"))
    hub.seen.clear()
    record, downloaded = pull.add(parse("hf.co/tiny/Tiny-GGUF:Tiny-F16.gguf"))
    assert not downloaded and record.name == "hf.co/tiny/Tiny-GGUF:F16"
    assert [s.path.split("/")[1] for s in hub.seen] == ["api"]


def test_an_unknown_repository_is_an_error_and_installs_nothing(
        hub: LocalHub, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"^hf.co/tiny/Nope: no model repository tiny/Nope on "
                       r"http://127.0.0.1:\d+ \(a private one needs HF_TOKEN\)$"):
        puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Nope"))
    assert not (tmp_path / "models").exists()


def test_an_unknown_tag_lists_the_gguf_files_and_installs_nothing(
        hub: LocalHub, tmp_path: Path) -> None:
    with pytest.raises(HubError) as raised:
        puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Tiny-GGUF:Q2_K"))
    assert str(raised.value) == ("tag 'Q2_K' matches no GGUF file of tiny/Tiny-GGUF; its GGUF "
                                 f"files: Tiny-F16.gguf, Tiny-Q4_K_M.gguf, {SPLIT[0]}")
    assert not (tmp_path / "models").exists()


def test_a_gated_repository_without_a_token_says_to_set_hf_token(
        hub: LocalHub, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"is gated: accept its conditions at http://127.0.0.1:"
                       r"\d+/tiny/Gated-GGUF, then set HF_TOKEN to a token of that account"):
        puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Gated-GGUF"))
    assert not (tmp_path / "models").exists()


def test_a_gated_repository_with_a_token_without_access_says_so_and_with_access_installs(
        hub: LocalHub, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"is gated and the account of your HF_TOKEN has no "
                       r"access: accept its conditions at"):
        puller(hub, tmp_path / "models", token="hf_other").add(parse("hf.co/tiny/Gated-GGUF"))
    assert not Store(tmp_path / "models").records()
    record, _ = puller(hub, tmp_path / "models", token="hf_granted").add(
        parse("hf.co/tiny/Gated-GGUF"))
    assert record.state == "installed"
    hub_side = {s.authorization for s in hub.seen if not s.path.startswith("/cdn/")}
    assert hub_side == {"Bearer hf_other", "Bearer hf_granted"}
    assert {s.authorization for s in hub.seen if s.path.startswith("/cdn/")} == {None}


def test_a_corrupt_download_is_a_hash_mismatch_and_is_deleted(
        blobs: dict[str, Path], tmp_path: Path) -> None:
    damaged = repo(blobs)
    damaged.files["Tiny-Q4_K_M.gguf"].corrupt = True
    with local_hub({"tiny/Tiny-GGUF": damaged}) as hub:
        with pytest.raises(HubError, match=r"^Tiny-Q4_K_M.gguf: SHA-256 mismatch, got [0-9a-f]{64}"
                           r", the Hub lists [0-9a-f]{64}; the download was deleted, try again$"):
            puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Tiny-GGUF"))
    assert list((tmp_path / "models").rglob("*")) == []


def test_a_cut_download_is_kept_as_partial_and_the_next_add_resumes_it_with_a_range(
        blobs: dict[str, Path], tmp_path: Path) -> None:
    cut = repo(blobs)
    cut.files["Tiny-Q4_K_M.gguf"].cut_once = 100_000
    with local_hub({"tiny/Tiny-GGUF": cut}) as hub:
        pull = puller(hub, tmp_path / "models")
        with pytest.raises(HubError, match=r"the download of hf.co/tiny/Tiny-GGUF:Q4_K_M was "
                           r"interrupted \(.+\); run the same command again to resume it"):
            pull.add(parse("hf.co/tiny/Tiny-GGUF"))
        store = Store(tmp_path / "models")
        assert [r.state for r in store.records()] == ["downloading"]
        assert store.partial("tiny/Tiny-GGUF", "Tiny-Q4_K_M.gguf").stat().st_size == 100_000
        record, downloaded = pull.add(parse("hf.co/tiny/Tiny-GGUF"))
    assert downloaded and record.state == "installed"
    assert [s.range for s in hub.seen if s.path.startswith("/cdn/")] == [None, "bytes=100000-"]
    assert store.first(record).read_bytes() == blobs["Tiny-Q4_K_M.gguf"].read_bytes()


def test_a_cdn_error_on_a_later_part_keeps_the_parts_done_and_the_next_add_finishes(
        blobs: dict[str, Path], tmp_path: Path) -> None:
    failing = repo(blobs)
    failing.files[SPLIT[1]].fail_once = 503
    with local_hub({"tiny/Tiny-GGUF": failing}) as hub:
        pull = puller(hub, tmp_path / "models")
        with pytest.raises(HubError, match=r"interrupted \(the download answered HTTP 503\); "
                           "run the same command again to resume it"):
            pull.add(parse("hf.co/tiny/Tiny-GGUF:Q8_0"))
        store = Store(tmp_path / "models")
        assert store.path("tiny/Tiny-GGUF", SPLIT[0]).read_bytes() == \
            blobs[SPLIT[0]].read_bytes()
        record, _ = pull.add(parse("hf.co/tiny/Tiny-GGUF:Q8_0"))
    assert record.state == "installed"
    fetched = [s.path for s in hub.seen if s.method == "GET" and s.path.startswith("/cdn/")]
    assert [fetched.count(f"/cdn/{failing.files[n].sha256}") for n in SPLIT] == [1, 2, 1]


def test_no_disk_space_is_an_error_before_any_download(hub: LocalHub, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=r"^not enough disk space in .*Tiny-GGUF: the download "
                       r"needs 0.00 GB more and 0.01 GB are free"):
        puller(hub, tmp_path / "models", free=10_000_000).add(parse("hf.co/tiny/Tiny-GGUF"))
    assert not (tmp_path / "models").exists()
    assert not [s for s in hub.seen if s.path.startswith("/cdn/")]


def test_offline_an_installed_model_is_found_and_a_missing_one_is_an_error(
        hub: LocalHub, tmp_path: Path) -> None:
    puller(hub, tmp_path / "models").add(parse("hf.co/tiny/Tiny-GGUF"))
    hub.seen.clear()
    offline = Puller(Hub(endpoint=hub.url, offline=True, token=None), Store(tmp_path / "models"))
    record, downloaded = offline.add(parse("hf.co/tiny/Tiny-GGUF"))
    assert (record.name, downloaded) == ("hf.co/tiny/Tiny-GGUF:Q4_K_M", False)
    with pytest.raises(HubError, match=r"^hf.co/tiny/Tiny-GGUF:F16 is not installed and "
                       "HF_HUB_OFFLINE is set: unset it to download$"):
        offline.add(parse("hf.co/tiny/Tiny-GGUF:F16"))
    assert hub.seen == []


def test_ensure_uses_an_installed_model_without_asking_the_hub(
        hub: LocalHub, tmp_path: Path) -> None:
    pull = puller(hub, tmp_path / "models")
    first = pull.ensure(parse("hf.co/tiny/Tiny-GGUF:q4_k_m"))
    hub.seen.clear()
    assert pull.ensure(parse("hf.co/tiny/Tiny-GGUF")) == first and hub.seen == []
