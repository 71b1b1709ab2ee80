"""A node's standard face: which paths map to the node's own, the bearer secret, and the
fields routers add."""

from __future__ import annotations

import asyncio
import json

import pytest

from b3os_infer.edge.fleet.protocol import SECRET_HEADER
from b3os_infer.edge.fleet.standard_api import StandardApi, own_path, without_router_defaults

SECRET = "s" * 32


@pytest.mark.parametrize(("standard", "own"), [
    ("/v1/chat/completions", "/v1/infer/chat/completions"),
    ("/v1/completions", "/v1/infer/completions"),
    ("/v1/responses/resp_1/input_items", "/v1/infer/responses/resp_1/input_items"),
    ("/v1/models/b3os/scripted", "/v1/infer/models/b3os/scripted"),
    ("/v1/messages/count_tokens", "/v1/infer/v1/messages/count_tokens"),
    ("/health", "/healthz"),
    ("/metrics", "/metrics"),
    ("/tokenize", "/v1/infer/tokenize"),
])
def test_standard_paths_map_to_the_node_routes(standard, own):
    assert own_path(standard) == own


@pytest.mark.parametrize("path", ["/v1/infer/chat/completions", "/v1/chat/completionsx",
                                  "/healthz", "/v1/files"])
def test_other_paths_are_left_alone(path):
    assert own_path(path) is None


def test_neutral_router_fields_are_dropped_and_others_kept_for_the_policy():
    body = {"model": "m", "messages": [], "ignore_eos": False, "skip_special_tokens": True,
            "include_reasoning": True, "stream": False}
    assert json.loads(without_router_defaults(json.dumps(body).encode())) == {
        "model": "m", "messages": [], "stream": False}
    changed = json.dumps({"model": "m", "ignore_eos": True, "skip_special_tokens": 1})
    assert without_router_defaults(changed.encode()) == changed.encode()
    assert without_router_defaults(b"[1, 2]") == b"[1, 2]"
    assert without_router_defaults(b"{not json") == b"{not json"


def _seen(path: str, headers: list[tuple[bytes, bytes]], body: bytes = b"",
          method: str = "POST") -> dict:
    seen: dict = {}

    async def inner(scope, receive, send):
        seen["scope"] = scope
        seen["body"] = (await receive())["body"]

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        pass

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(StandardApi(inner, SECRET)(scope, receive, send))
    return seen


def _secret_header(scope: dict) -> bytes | None:
    return dict(scope["headers"]).get(SECRET_HEADER.encode())


def test_the_secret_as_a_bearer_token_becomes_the_node_secret_header():
    seen = _seen("/v1/chat/completions", [(b"authorization", f"Bearer {SECRET}".encode()),
                                          (b"content-length", b"40")],
                 b'{"model": "m", "ignore_eos": false}')
    assert seen["scope"]["path"] == "/v1/infer/chat/completions"
    assert _secret_header(seen["scope"]) == SECRET.encode()
    assert json.loads(seen["body"]) == {"model": "m"}
    assert b"content-length" not in dict(seen["scope"]["headers"])


def test_another_bearer_token_gets_no_secret_and_the_guard_refuses_it():
    seen = _seen("/v1/chat/completions", [(b"authorization", b"Bearer client-key")], b"{}")
    assert _secret_header(seen["scope"]) is None


@pytest.mark.parametrize("path", ["/health", "/metrics"])
def test_the_health_probe_and_the_scrape_need_no_credential(path):
    assert _secret_header(_seen(path, [], method="GET")["scope"]) == SECRET.encode()
