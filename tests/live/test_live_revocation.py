"""`b3os-infer keys revoke` (a separate process) holds on the next request a second later,
on a lone server and on every edge that shares one PostgreSQL.

A request never trusts a view of the keys older than a second (``edge/access/key_revision.py``):
so a request sent one second after the CLI returned must be refused, however loaded the
machine is; this is the guarantee, not a timing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.postgres import postgres_server
from support.scripted_server import MODEL, ScriptedServer, scripted_server

BODY = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
REVISION_SECONDS = 1.0


def _ask(server: ScriptedServer, key: str) -> httpx.Response:
    return httpx.post(server.base_url + "/v1/messages", json=BODY, timeout=30,
                      headers={"x-api-key": key, "anthropic-version": "2023-06-01"})


@pytest.fixture
def servers() -> Iterator[list[ScriptedServer]]:
    started: list[ScriptedServer] = []
    yield started
    for server in started:
        server.stop()


def test_a_key_revoked_with_the_cli_is_refused_a_second_later(tmp_path: Path,
                                                              servers: list[ScriptedServer]):
    server = scripted_server(tmp_path, [])
    key = server.new_key()
    servers.append(server.start())
    assert [_ask(server, key).status_code for _ in range(3)] == [200] * 3   # cached now
    server.cli("keys", "revoke", key)
    time.sleep(REVISION_SECONDS)
    refused = _ask(server, key)
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["type"] == "authentication_error"
    assert "revoked" in refused.json()["error"]["message"]


def test_a_key_revoked_once_is_refused_by_every_edge_sharing_postgres(
        tmp_path: Path, servers: list[ScriptedServer]):
    with postgres_server() as url:
        env = {"B3OS_INFER_DATABASE_URL": url}
        edges = [scripted_server(tmp_path / f"edge{i}", [], env=env) for i in range(2)]
        key, other = edges[0].new_key("shared"), edges[1].new_key("kept")
        for edge in edges:
            servers.append(edge.start())
        assert [_ask(edge, k).status_code for edge in edges for k in (key, other)] == [200] * 4
        edges[1].cli("keys", "revoke", key)
        time.sleep(REVISION_SECONDS)
        after = [_ask(edge, k).status_code for edge in edges for k in (key, other)]
        for edge in edges:
            edge.stop()
    assert after == [401, 200, 401, 200]
