"""Starting the real server as a user would: a free port, the CLI, readiness, stopping."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass(frozen=True)
class LiveServer:
    root: str
    key: str
    home: Path

    @property
    def base_url(self) -> str:
        return self.root + "/v1/infer"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", *args], env=env,
                          capture_output=True, text=True, check=True)


def start_server(home: Path, port: int, *extra: str,
                 env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home), "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "b3os_infer.cli", "serve", "--port", str(port), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_ready(url: str, process: subprocess.Popen[str], output: Callable[[], str],
               timeout: float = 120) -> None:
    """Until ``url`` answers 200; fails with the process's ``output`` if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {process.returncode}:\n"
                               f"{output()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in time")


def wait_healthy(root: str, process: subprocess.Popen[str], timeout: float = 120) -> None:
    wait_ready(root + "/healthz", process,
               lambda: process.stdout.read() if process.stdout else "", timeout)


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()
