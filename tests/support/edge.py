"""Helpers for the edge tests: a real redis-server on a free port, and configs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from support.servers import free_port


@contextmanager
def redis_server() -> Iterator[str]:
    """``B3OS_TEST_REDIS_URL`` (CI starts one), else a fresh redis-server we stop after."""
    if url := os.environ.get("B3OS_TEST_REDIS_URL"):
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is needed: `apt-get install -y redis-server`, or set "
                    "B3OS_TEST_REDIS_URL to a running one")
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
