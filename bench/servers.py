"""Starting and stopping the two servers under test, one at a time.

Both serve the same GGUF with the same threads and the same context window per
sequence. Two llama.cpp processes on a small machine slow each other down many times
over, so a server is always stopped before the other one starts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx


@dataclass(frozen=True)
class Setup:
    """What both servers share."""

    model_path: str
    threads: int
    context_window: int
    parallel: int


@dataclass(frozen=True)
class Server:
    """A running server, as the benchmark client sees it."""

    name: str
    chat_url: str
    model: str
    headers: dict[str, str] = field(default_factory=dict)
    # fields only this server understands that make both do the same work
    extra_body: dict[str, Any] = field(default_factory=dict)
    usage_in_stream: bool = False
    messages_url: str = ""   # the Anthropic Messages route, where the server has one
    pid: int = 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[bytes], headers: dict[str, str],
                timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, headers=headers, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{url} did not answer in {timeout:.0f} s")


def peak_rss(pid: int) -> int:
    """The most resident memory the process has held so far, in bytes (Linux)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _key(home: Path, env: dict[str, str]) -> str:
    """The bench's key in ``home``: created once, kept beside it for a restart."""
    kept = home / "bench.key"
    if not kept.is_file():
        created = subprocess.run(
            [sys.executable, "-m", "b3os_infer.cli", "keys", "create", "--name", "bench"],
            env=env, capture_output=True, text=True, check=True)
        kept.write_text(created.stdout.strip().splitlines()[-1])
    return kept.read_text().strip()


def _our_config(setup: Setup, pack: str | None, engine: tuple[str, ...] = ()) -> str:
    """``engine``: more ``[engine]`` lines (``speculative = false``), as given."""
    lines = "".join(f"{line}\n" for line in engine)
    if pack is not None:   # the pack's own window, our default slots: as `make serve` runs it
        return f"[engine]\nthreads = {setup.threads}\n{lines}"
    return (f"[engine]\nthreads = {setup.threads}\nparallel = {setup.parallel}\n{lines}"
            f"[model]\npath = \"{setup.model_path}\"\n"
            f"context_window = {setup.context_window}\n")


def link_pack(home: Path, pack: str, gguf: Path) -> None:
    """Make an installed pack's GGUF an installed pack of ``home`` too (no copy)."""
    models = home / "models"
    models.mkdir(parents=True, exist_ok=True)
    target = models / f"{pack}.gguf"
    if not target.exists():
        target.symlink_to(gguf.resolve())


@contextmanager
def scratch_home() -> Iterator[Path]:
    """A throw-away home for our server, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="b3os-bench-") as home:
        yield Path(home)


@contextmanager
def ours(setup: Setup, log: Path, home: Path | None = None,
         pack: str | None = None, engine: tuple[str, ...] = ()) -> Iterator[Server]:
    """``b3os-infer serve`` with one key and the shared settings; a fresh home unless one
    is given (a restart keeps its home: its keys and its caches). With ``pack``, the home's
    installed model pack (``serve --model PACK``), otherwise ``setup.model_path``;
    ``engine`` adds lines to the config's ``[engine]`` section."""
    with ExitStack() as stack:
        if home is None:
            home = stack.enter_context(scratch_home())
        env = {**os.environ, "B3OS_INFER_HOME": str(home)}
        key = _key(home, env)
        config = home / "bench.toml"
        config.write_text(_our_config(setup, pack, engine))
        port = _free_port()
        root = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "b3os_infer.cli", "serve", "--port", str(port),
                   "--config", str(config), *(["--model", pack] if pack else [])]
        with log.open("ab") as out:
            process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        stack.callback(_stop, process)
        _wait_ready(root + "/healthz", process, {})
        yield Server(name="ours", chat_url=root + "/v1/infer/chat/completions",
                     model=f"b3os/{pack}" if pack else "b3os/smollm2-135m-instruct",
                     headers={"Authorization": f"Bearer {key}"},
                     extra_body={"stream_options": {"include_usage": True}},
                     usage_in_stream=True, messages_url=root + "/v1/infer/v1/messages",
                     pid=process.pid)


@contextmanager
def peer(setup: Setup, log: Path) -> Iterator[Server]:
    """``python -m llama_cpp.server`` on the same GGUF, threads and window.

    Its own defaults otherwise (batch, f16 KV cache, no flash attention), as its users
    get it, except that a new request waits for the running one instead of cutting it
    off (``--interrupt_requests False``); and ``repeat_penalty`` 1.0 in each request,
    since its default (1.1) would make it do more work per token than the greedy
    decoding both are asked for.
    """
    port = _free_port()
    root = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", setup.model_path,
               "--model_alias", "peer", "--n_ctx", str(setup.context_window),
               "--n_threads", str(setup.threads), "--n_threads_batch", str(setup.threads),
               "--interrupt_requests", "False", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(root + "/v1/models", process, {})
        yield Server(name="peer", chat_url=root + "/v1/chat/completions", model="peer",
                     extra_body={"repeat_penalty": 1.0})
    finally:
        _stop(process)


@dataclass(frozen=True)
class LlamaServer:
    """llama.cpp's own server (``bench/build_llama_server.sh`` builds it)."""

    binary: Path
    model_path: str
    threads: int
    context_window: int   # tokens per sequence
    parallel: int
    extra: tuple[str, ...] = ()   # more arguments (``--spec-type ngram-mod``)


def llama_server_command(peer: LlamaServer, port: int) -> list[str]:
    """Its defaults otherwise, as its users get them: f16 KV cache, prompt cache on."""
    return [str(peer.binary), "--model", peer.model_path, "--alias", "peer",
            "--threads", str(peer.threads), "--threads-batch", str(peer.threads),
            "--ctx-size", str(peer.context_window * peer.parallel),
            "--parallel", str(peer.parallel), "--jinja",
            "--host", "127.0.0.1", "--port", str(port), *peer.extra]


@contextmanager
def llama_server(peer: LlamaServer, log: Path) -> Iterator[Server]:
    if not peer.binary.is_file():
        raise RuntimeError(f"{peer.binary} is missing: `make llama-server` builds it")
    port = _free_port()
    root = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        process = subprocess.Popen(llama_server_command(peer, port), stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        _wait_ready(root + "/health", process, {})
        yield Server(name="llama-server", chat_url=root + "/v1/chat/completions",
                     model="peer", extra_body={"stream_options": {"include_usage": True}},
                     usage_in_stream=True, messages_url=root + "/v1/messages",
                     pid=process.pid)
    finally:
        _stop(process)
