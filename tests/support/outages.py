"""Redis and PostgreSQL servers that a test stops and starts again, on the same port
(and, for PostgreSQL, the same data), to see what the edge does while they are gone."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from support.edge import _wait_for_redis, redis_binary
from support.postgres import _run_to_end, _stop, _wait_for_postgres, make_runner
from support.servers import free_port


class RedisProcess:
    def __init__(self) -> None:
        self.port = free_port()
        self.workdir = tempfile.mkdtemp(prefix="b3os-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisProcess:
        self.process = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_redis(self.url, self.process)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class PostgresProcess:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="b3os-pg-"))
        self.runner = make_runner(self.root)
        self.data, self.log, self.port = self.root / "data", self.root / "postgres.log", \
            free_port()
        _run_to_end(self.runner, self.runner.command("initdb", "-D", str(self.data), "-A",
                                                     "trust", "-U", "postgres"),
                    self.log, self.root)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> PostgresProcess:
        self.process = self.runner.popen(self.runner.command(
            "postgres", "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
            "-c", "listen_addresses=127.0.0.1"), self.log, self.root)
        _wait_for_postgres(self.port, self.process, self.log)
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
