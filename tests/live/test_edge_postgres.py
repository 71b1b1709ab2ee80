"""Keys, the usage ledger and stored responses on a real PostgreSQL server, reached by
URL."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine

from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.storage.db import open_database
from b3os_infer.edge.storage.response_store import ResponseTable
from b3os_infer.edge.storage.usage import UsageLedger, UsageRow
from b3os_infer.http.stored_responses import StoredResponse
from support.postgres import postgres_server


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def engines(postgres_url: str) -> Iterator[Callable[[], Engine]]:
    """Separate engines, as separate processes would have; all closed afterwards."""
    made: list[Engine] = []

    def make() -> Engine:
        made.append(open_database(postgres_url))
        return made[-1]

    yield make
    for engine in made:
        engine.dispose()


def test_keys_on_postgres(engines: Callable[[], Engine]) -> None:
    store = KeyStore(engines())
    record, key = store.create("pg", ("infer",))
    assert store.verify(key).id == record.id
    assert store.verify(key[:-1] + ("x" if key[-1] != "x" else "y")) is None
    assert any(r.id == record.id for r in KeyStore(engines()).list())
    store.revoke(record.id)
    assert KeyStore(engines()).verify(key) is None


def test_usage_ledger_on_postgres(engines: Callable[[], Engine]) -> None:
    ledger = UsageLedger(engines())
    ledger.record(UsageRow("req_pg1", "k1", "m", "POST /v1/messages", 200, 10, 5, 2, 12.5))
    again = UsageLedger(engines())
    assert any(r.request_id == "req_pg1" and r.cached_tokens == 2 for r in again.rows())
    assert any(t.key_id == "k1" and t.model == "m" for t in again.totals())


def test_usage_series_on_postgres(engines: Callable[[], Engine]) -> None:
    ledger = UsageLedger(engines())
    for rid, status in (("req_s1", 200), ("req_s2", 429), ("req_s3", 200)):
        ledger.record(UsageRow(rid, "ks", "m", "POST /v1/messages", status, 10, 5, 0, 1.0))
    for bucket, tail in (("minute", ":00Z"), ("hour", ":00:00Z"), ("day", "T00:00:00Z")):
        points = [p for p in ledger.series(bucket, "2000-01-01T00:00:00Z") if p.key_id == "ks"]
        assert sum(p.requests for p in points) == 3 and sum(p.errors for p in points) == 1
        assert sum(p.input_tokens for p in points) == 30
        assert all(p.start.endswith(tail) and len(p.start) == 20 for p in points)
    assert [p for p in ledger.series("day", "2999-01-01T00:00:00Z") if p.key_id == "ks"] == []


def test_stored_responses_on_postgres_belong_to_their_key(
        engines: Callable[[], Engine]) -> None:
    stored = StoredResponse(id="resp_pg1", model="m",
                            body={"id": "resp_pg1", "output": [{"type": "message"}]},
                            items=[{"type": "message", "id": "msg_1", "role": "user",
                                    "content": [{"type": "input_text", "text": "hé"}]}])
    ResponseTable(engines()).put("k1", stored)
    other = ResponseTable(engines())
    assert other.get("k1", "resp_pg1") == stored
    assert other.get("k2", "resp_pg1") is None
    assert other.delete("k2", "resp_pg1") is False
    assert other.delete("k1", "resp_pg1") is True
    assert ResponseTable(engines()).get("k1", "resp_pg1") is None
