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
from contextlib import contextmanager
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


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def ours(setup: Setup, log: Path) -> Iterator[Server]:
    """``b3os-infer serve`` with a fresh home, one key and the shared settings."""
    with tempfile.TemporaryDirectory(prefix="b3os-bench-") as home:
        env = {**os.environ, "B3OS_INFER_HOME": home}
        command = [sys.executable, "-m", "b3os_infer.cli"]
        created = subprocess.run([*command, "keys", "create", "--name", "bench"], env=env,
                                 capture_output=True, text=True, check=True)
        key = created.stdout.strip().splitlines()[-1]
        config = Path(home) / "bench.toml"
        config.write_text(
            f"[engine]\nthreads = {setup.threads}\nparallel = {setup.parallel}\n"
            f"[model]\npath = \"{setup.model_path}\"\n"
            f"context_window = {setup.context_window}\n")
        port = _free_port()
        root = f"http://127.0.0.1:{port}"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*command, "serve", "--port", str(port), "--config", str(config)],
                env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_ready(root + "/healthz", process, {})
            yield Server(name="ours", chat_url=root + "/v1/infer/chat/completions",
                         model="b3os/smollm2-135m-instruct",
                         headers={"Authorization": f"Bearer {key}"},
                         extra_body={"stream_options": {"include_usage": True}},
                         usage_in_stream=True)
        finally:
            _stop(process)


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
