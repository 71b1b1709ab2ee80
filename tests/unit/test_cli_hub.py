"""``b3os-infer models add|list|rm hf.co/…`` run as a user would, against a local Hub
(``HF_ENDPOINT``): what the commands print, their exit codes, and what they leave."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import b3os_infer
from support.hub_server import HubFile, HubRepo, LocalHub, local_hub

SOURCES = str(Path(b3os_infer.__file__).resolve().parents[1])   # the code under test
NAME = "hf.co/tiny/Tiny-GGUF:Q4_K_M"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LocalHub]:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    files = {}
    for n, name in enumerate(["Tiny-Q4_K_M.gguf", "Tiny-Q8_0.gguf"]):
        (blobs / name).write_bytes(b"GGUF" + bytes([n]) * 2_500_000)
        files[name] = HubFile(blobs / name)
    with local_hub({"tiny/Tiny-GGUF": HubRepo(files),
                    "tiny/Gated-GGUF": HubRepo(dict(files), gated=True)}) as running:
        yield running


def cli(home: Path, hub: LocalHub, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"B3OS_INFER_HOME": str(home), "PATH": "/usr/bin", "PYTHONPATH": SOURCES,
                   "HF_ENDPOINT": hub.url, "HF_HOME": str(home / "hf"), **env}
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", *args], capture_output=True,
                          text=True, env=environment, check=False, timeout=120)


def pulled(home: Path) -> list[str]:
    root = home / "models" / "hf.co"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_models_add_installs_with_a_progress_bar_and_says_how_to_serve_it(
        tmp_path: Path, hub: LocalHub) -> None:
    added = cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF")
    assert added.returncode == 0, added.stderr
    gguf = tmp_path / "models" / "hf.co" / "tiny" / "Tiny-GGUF" / "Tiny-Q4_K_M.gguf"
    assert added.stdout.splitlines() == [
        f"installed {NAME}: {gguf}", "2,500,004 bytes in 1 file(s), SHA-256 checked against "
        "the Hub's", f"serve it with: b3os-infer serve --model {NAME}"]
    assert added.stderr.splitlines()[0] == (f"downloading {NAME} (0.00 GB in 1 file) from "
                                            f"{hub.url}/tiny/Tiny-GGUF")
    assert added.stderr.splitlines()[-1].startswith(f"pulling {NAME} [####")
    assert added.stderr.splitlines()[-1].endswith("2.5 / 2.5 MB 100%")
    again = cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF:q4_k_m")
    assert again.returncode == 0 and again.stdout.startswith(f"{NAME} is already installed")


def test_models_list_shows_size_state_and_source_and_rm_removes(
        tmp_path: Path, hub: LocalHub) -> None:
    assert cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF").returncode == 0
    listed = cli(tmp_path, hub, "models", "list").stdout.splitlines()
    start = listed.index(next(line for line in listed if line.startswith("HUB MODEL")))
    assert listed[start + 1].split() == [NAME, "2.5", "MB", "installed",
                                         f"{hub.url}/tiny/Tiny-GGUF", "@", "0123456789ab"]
    removed = cli(tmp_path, hub, "models", "rm", "hf.co/tiny/Tiny-GGUF")
    assert removed.returncode == 0 and removed.stdout == f"removed {NAME} (2,500,004 bytes)\n"
    assert pulled(tmp_path) == []
    assert "(none yet: b3os-infer models add hf.co/OWNER/REPO[:TAG])" in \
        cli(tmp_path, hub, "models", "list").stdout


def test_an_installed_model_whose_file_went_missing_is_listed_as_incomplete(
        tmp_path: Path, hub: LocalHub) -> None:
    assert cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF").returncode == 0
    (tmp_path / "models" / "hf.co" / "tiny" / "Tiny-GGUF" / "Tiny-Q4_K_M.gguf").unlink()
    rows = [line.split() for line in cli(tmp_path, hub, "models", "list").stdout.splitlines()]
    assert [NAME, "2.5", "MB", "incomplete"] in [row[:4] for row in rows]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_pull_is_one_line_and_the_next_add_resumes(
        tmp_path: Path, hub: LocalHub) -> None:
    hub.repos["tiny/Tiny-GGUF"].files["Tiny-Q4_K_M.gguf"].stall_once = 700_000
    env = {"B3OS_INFER_HOME": str(tmp_path), "PATH": "/usr/bin", "PYTHONPATH": SOURCES,
           "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    # Ctrl-C reaches it as it would from a terminal, even when these tests run in a
    # background job (whose children start with SIGINT ignored)
    process = subprocess.Popen([sys.executable, "-m", "b3os_infer.cli", "models", "add",
                                "hf.co/tiny/Tiny-GGUF"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=_default_sigint)
    partial = tmp_path / "models" / "hf.co" / "tiny" / "Tiny-GGUF" / "Tiny-Q4_K_M.gguf.partial"
    try:
        deadline = time.monotonic() + 60
        while not (partial.is_file() and partial.stat().st_size == 700_000):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1
    assert stderr.splitlines()[-1] == ("b3os-infer: stopped pulling hf.co/tiny/Tiny-GGUF; what "
                                       "was downloaded is kept: run the same command again to "
                                       "resume")
    assert "Traceback" not in stderr
    resumed = cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF")
    assert resumed.returncode == 0 and resumed.stdout.startswith(f"installed {NAME}")
    assert [s.range for s in hub.seen if s.path.startswith("/cdn/")] == [None, "bytes=700000-"]


def test_a_cut_download_is_listed_as_partial(tmp_path: Path, hub: LocalHub) -> None:
    hub.repos["tiny/Tiny-GGUF"].files["Tiny-Q4_K_M.gguf"].cut_once = 1_000_000
    cut = cli(tmp_path, hub, "models", "add", "hf.co/tiny/Tiny-GGUF")
    assert cut.returncode == 1 and "run the same command again to resume it" in cut.stderr
    listed = cli(tmp_path, hub, "models", "list").stdout
    assert f"{NAME}" in listed and " partial " in listed


@pytest.mark.parametrize(("args", "env", "message"), [
    (("models", "add", "hf.co/tiny/Nope"), {},
     "b3os-infer: hf.co/tiny/Nope: no model repository tiny/Nope on {url} (a private one "
     "needs HF_TOKEN)"),
    (("models", "add", "hf.co/tiny/Tiny-GGUF:Q2_K"), {},
     "b3os-infer: tag 'Q2_K' matches no GGUF file of tiny/Tiny-GGUF; its GGUF files: "
     "Tiny-Q4_K_M.gguf, Tiny-Q8_0.gguf"),
    (("models", "add", "hf.co/tiny/Gated-GGUF"), {},
     "b3os-infer: hf.co/tiny/Gated-GGUF is gated: accept its conditions at "
     "{url}/tiny/Gated-GGUF, then set HF_TOKEN to a token of that account"),
    (("models", "add", "hf.co/tiny/Gated-GGUF"), {"HF_TOKEN": "hf_not_granted"},
     "b3os-infer: hf.co/tiny/Gated-GGUF is gated and the account of your HF_TOKEN has no "
     "access: accept its conditions at {url}/tiny/Gated-GGUF"),
    (("models", "add", "hf.co/tiny/Tiny-GGUF"), {"HF_HUB_OFFLINE": "1"},
     "b3os-infer: hf.co/tiny/Tiny-GGUF is not installed and HF_HUB_OFFLINE is set: unset it "
     "to download"),
    (("models", "add", "hf.co/tiny"), {},
     "b3os-infer: 'hf.co/tiny' is not a Hub model name: write hf.co/OWNER/REPO or "
     "hf.co/OWNER/REPO:TAG (TAG a quantization such as Q4_K_M, or a file name)"),
    (("models", "rm", "hf.co/tiny/Tiny-GGUF"), {},
     "b3os-infer: no model of tiny/Tiny-GGUF is installed: `b3os-infer models list` shows "
     "what is")])
def test_bad_input_is_one_line_on_stderr_exit_1_and_installs_nothing(
        tmp_path: Path, hub: LocalHub, args: tuple[str, ...], env: dict[str, str],
        message: str) -> None:
    done = cli(tmp_path, hub, *args, **env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [message.format(url=hub.url)]
    assert pulled(tmp_path) == []


def test_serve_of_an_unknown_hub_repository_is_one_line_and_exit_2(
        tmp_path: Path, hub: LocalHub) -> None:
    served = cli(tmp_path, hub, "serve", "--model", "hf.co/tiny/Nope")
    assert served.returncode == 2
    assert served.stderr.splitlines() == [f"b3os-infer: hf.co/tiny/Nope: no model repository "
                                          f"tiny/Nope on {hub.url} (a private one needs "
                                          "HF_TOKEN)"]
