"""Refusals at authentication reach the ledger."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from starlette.responses import JSONResponse

from b3os_infer.edge.access.auth import AuthMiddleware
from b3os_infer.edge.access.key_gate import KeyGate
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.request_stamps import RequestContextMiddleware
from b3os_infer.edge.storage.db import open_database
from b3os_infer.edge.storage.usage import UsageLedger


async def _ok(scope, receive, send):
    await JSONResponse({"ok": True})(scope, receive, send)


@pytest.fixture
def stores(tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}")
    ledger = UsageLedger(engine)
    yield KeyStore(engine), ledger
    ledger.close()
    engine.dispose()


def test_refused_requests_are_written_to_the_ledger(stores):
    keys, ledger = stores
    record, key = keys.create("reader", ("models:read",))
    app = RequestContextMiddleware(AuthMiddleware(_ok, KeyGate(keys, ledger.threads), ledger))

    async def calls():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            unknown = await client.post("/v1/infer/v1/messages", headers={"x-api-key": "nope"})
            scoped = await client.post("/v1/infer/chat/completions",
                                       headers={"authorization": f"Bearer {key}"})
            allowed = await client.get("/v1/infer/models", headers={"x-api-key": key})
        return unknown, scoped, allowed

    unknown, scoped, allowed = asyncio.run(calls())
    assert (unknown.status_code, scoped.status_code, allowed.status_code) == (401, 403, 200)
    rows = {row.request_id: row for row in ledger.rows()}
    assert rows[unknown.headers["request-id"]].status == 401
    assert rows[unknown.headers["request-id"]].key_id is None
    assert rows[scoped.headers["request-id"]].status == 403
    assert rows[scoped.headers["request-id"]].key_id == record.id
    assert rows[scoped.headers["request-id"]].route == "POST /chat/completions"


def test_a_cached_key_stops_working_the_moment_it_expires(stores):
    keys, ledger = stores
    expires = time.time() + 2
    _, key = keys.create("brief", expires_at=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                           time.gmtime(expires)))
    gate = KeyGate(keys, ledger.threads, revision_seconds=3600)   # no fresh look at the db
    app = RequestContextMiddleware(AuthMiddleware(_ok, gate, ledger))

    async def calls():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            before = await client.get("/v1/infer/models", headers={"x-api-key": key})
            await asyncio.sleep(max(0.0, int(expires) + 1.05 - time.time()))
            after = await client.get("/v1/infer/models", headers={"x-api-key": key})
        return before, after

    before, after = asyncio.run(calls())
    assert before.status_code == 200
    assert after.status_code == 401
    assert after.json()["error"]["code"] == "expired_api_key"
