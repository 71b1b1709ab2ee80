"""Redis or PostgreSQL gone, then back: shaped refusals while gone, service when back.

Both fail closed: while Redis (the rate limits) or PostgreSQL (the keys) cannot answer, a
request is refused as overloaded, 529 ``overloaded_error`` on Anthropic routes and 503 on
OpenAI routes, with ``retry-after: 1``, b3os code ``limits_unavailable`` or
``keys_unavailable``, and a message that names no host. When the server returns, requests
are served again without a restart, and the usage rows of the requests refused meanwhile
(kept in memory) reach PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from support.outages import PostgresProcess, RedisProcess
from support.scripted_server import MODEL, ScriptedServer, scripted_server

ANTHROPIC = ("/v1/messages", {"model": MODEL, "max_tokens": 8,
                              "messages": [{"role": "user", "content": "hi"}]})
OPENAI = ("/chat/completions", {"model": MODEL, "messages": [{"role": "user",
                                                              "content": "hi"}]})
RECOVERY_SECONDS = 30


def _ask(server: ScriptedServer, key: str, route: tuple[str, dict[str, object]]
         ) -> httpx.Response:
    path, body = route
    return httpx.post(server.base_url + path, json=body, timeout=30,
                      headers={"x-api-key": key, "authorization": f"Bearer {key}",
                               "anthropic-version": "2023-06-01"})


def _recovered(server: ScriptedServer, key: str) -> list[int]:
    """Asks until both routes answer 200 (or RECOVERY_SECONDS pass); every status seen."""
    seen: list[int] = []
    deadline = time.monotonic() + RECOVERY_SECONDS
    while time.monotonic() < deadline:
        statuses = [_ask(server, key, route).status_code for route in (ANTHROPIC, OPENAI)]
        seen += statuses
        if statuses == [200, 200]:
            break
        time.sleep(0.2)
    return seen


def _assert_overloaded(anthropic: httpx.Response, openai: httpx.Response, code: str) -> None:
    assert anthropic.status_code == 529, anthropic.text
    body = anthropic.json()
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert body["b3os"]["code"] == code
    assert openai.status_code == 503, openai.text
    assert openai.json()["error"]["code"] == code
    for response in (anthropic, openai):
        assert response.headers["retry-after"] == "1"
        assert "127.0.0.1" not in response.text and "connect" not in response.text.lower()


@pytest.fixture
def redis() -> Iterator[RedisProcess]:
    process = RedisProcess().start()
    yield process
    process.close()


@pytest.fixture
def postgres() -> Iterator[PostgresProcess]:
    process = PostgresProcess().start()
    yield process
    process.close()


def test_without_redis_requests_are_refused_as_overloaded_and_served_once_it_is_back(
        tmp_path: Path, redis: RedisProcess):
    server = scripted_server(tmp_path, [], toml=f'[edge]\nredis_url = "{redis.url}"\n')
    key = server.new_key()
    server.start()
    try:
        before = [_ask(server, key, route).status_code for route in (ANTHROPIC, OPENAI)]
        redis.stop()
        gone = [_ask(server, key, route) for route in (ANTHROPIC, OPENAI)]
        redis.start()
        back = _recovered(server, key)
    finally:
        server.stop()
    assert before == [200, 200]
    _assert_overloaded(gone[0], gone[1], code="limits_unavailable")
    assert back[-2:] == [200, 200]


def test_without_postgres_keys_fail_closed_and_all_is_served_and_recorded_once_it_is_back(
        tmp_path: Path, postgres: PostgresProcess):
    server = scripted_server(tmp_path, [], env={"B3OS_INFER_DATABASE_URL": postgres.url})
    key = server.new_key()
    server.start()
    try:
        before = [_ask(server, key, route).status_code for route in (ANTHROPIC, OPENAI)]
        postgres.stop()
        time.sleep(1.0)          # past the age at which the keys' view must be read again
        gone = [_ask(server, key, route) for route in (ANTHROPIC, OPENAI)]
        postgres.start()
        back = _recovered(server, key)
    finally:
        server.stop()
    assert before == [200, 200]
    _assert_overloaded(gone[0], gone[1], code="keys_unavailable")
    assert back[-2:] == [200, 200]
    engine = create_engine(postgres.url)
    try:
        with engine.connect() as db:
            rows = {request_id: status for request_id, status in
                    db.execute(text("SELECT request_id, status FROM usage"))}
    finally:
        engine.dispose()
    for refused in gone:     # written once PostgreSQL was back, with the status sent
        assert rows[refused.headers["request-id"]] == refused.status_code
