"""Keys and the usage ledger on a real PostgreSQL server, reached by URL."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from b3os_infer.edge.db import open_database
from b3os_infer.edge.keys import KeyStore
from b3os_infer.edge.usage import UsageLedger, UsageRow
from support.servers import free_port

BIN = Path("/usr/lib/postgresql/15/bin")


def _pg(tool: str) -> str:
    found = shutil.which(tool) or (str(BIN / tool) if (BIN / tool).exists() else None)
    if found is None:
        pytest.fail(f"{tool} is needed: `apt-get install -y postgresql`, or set "
                    "B3OS_TEST_POSTGRES_URL to a running server")
    return found


def _as_postgres(args: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root; run them as the postgres user then."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    if url := os.environ.get("B3OS_TEST_POSTGRES_URL"):
        yield url
        return
    root = Path(tempfile.mkdtemp(prefix="b3os-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    subprocess.run(_as_postgres([_pg("initdb"), "-D", str(data), "-A", "trust", "-U",
                                 "postgres"]), check=True, capture_output=True)
    port = free_port()
    server = subprocess.Popen(_as_postgres([_pg("postgres"), "-D", str(data), "-p", str(port),
                                            "-k", str(root), "-c",
                                            "listen_addresses=127.0.0.1"]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 30
        while subprocess.run([_pg("pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "postgres did not start"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def engines(postgres_url):
    """Separate engines, as separate processes would have; all closed afterwards."""
    made = []

    def make():
        made.append(open_database(postgres_url))
        return made[-1]

    yield make
    for engine in made:
        engine.dispose()


def test_keys_on_postgres(engines):
    store = KeyStore(engines())
    record, key = store.create("pg", ("infer",))
    assert store.verify(key).id == record.id
    assert store.verify(key[:-1] + ("x" if key[-1] != "x" else "y")) is None
    assert any(r.id == record.id for r in KeyStore(engines()).list())
    store.revoke(record.id)
    assert KeyStore(engines()).verify(key) is None


def test_usage_ledger_on_postgres(engines):
    ledger = UsageLedger(engines())
    ledger.record(UsageRow("req_pg1", "k1", "m", "POST /v1/messages", 200, 10, 5, 2, 12.5))
    again = UsageLedger(engines())
    assert any(r.request_id == "req_pg1" and r.cached_tokens == 2 for r in again.rows())
    assert any(t.key_id == "k1" and t.model == "m" for t in again.totals())
