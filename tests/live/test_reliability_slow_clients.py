"""Slow and oversized clients against the real server process (scripted engine): they
hold no engine sequence and no queue place, a stalled body is answered 408, a head not
sent in time or over 1 MiB closes the connection, oversized headers get 431 and bodies
413, each in its route's error shape (docs/reliability.md)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from support.reliability_server import ROUTES, ScriptedServer, scripted_server

BODY_TIMEOUT_S = 2
HEAD_TIMEOUT_S = 4
MAX_BODY = 4096


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("slow")
    with scripted_server(home, edge={"body_timeout_seconds": BODY_TIMEOUT_S,
                                     "max_body_bytes": MAX_BODY},
                         server={"head_timeout_seconds": HEAD_TIMEOUT_S}) as started:
        yield started


def _connect(server: ScriptedServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _head(server: ScriptedServer, path: str, length: int) -> bytes:
    return (f"POST /v1/infer{path} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            f"x-api-key: {server.key}\r\ncontent-type: application/json\r\n"
            f"content-length: {length}\r\n\r\n").encode()


def _answer(sock: socket.socket) -> tuple[int, dict[str, object]]:
    data = b""
    while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    return int(head.split()[1]), json.loads(body)


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_request_head_over_a_mebibyte_closes_the_connection(server):
    sock = _connect(server)
    try:
        head = _head(server, "/v1/messages", 2)[:-2]
        try:
            sock.sendall(head + b"x-padding: " + b"a" * (2 << 20))
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert _closed_by_server(sock)
    finally:
        sock.close()
    assert _ok(server).status_code == 200


def _ok(server: ScriptedServer) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", timeout=30,
                      json=ROUTES["/chat/completions"]("hello", stream=False),
                      headers={"x-api-key": server.key})


def test_clients_trickling_headers_and_bodies_hold_no_slot_and_others_are_answered(server):
    body = json.dumps(ROUTES["/v1/messages"]("hello", stream=False)).encode()
    head = _head(server, "/v1/messages", len(body))
    trickling = [_connect(server) for _ in range(40)]
    try:
        for index, sock in enumerate(trickling):   # 20 are in their headers, 20 in bodies
            sock.sendall(head[:30] if index % 2 else head + body[:10])
        for step in range(20):                      # one byte each, a byte at a time
            for index, sock in enumerate(trickling):
                if index % 2:
                    sock.sendall(head[30 + step:31 + step])
            time.sleep(0.05)
        assert _ok(server).status_code == 200      # others are answered meanwhile
        assert server.busy() == {"active": 0, "waiting": 0, "queue_running": 0,
                                 "queue_waiting": 0}
        # the stalled bodies are answered 408 in the route's shape once they stall
        status, error = _answer(trickling[0])
        assert status == 408
        assert error["type"] == "error" and error["b3os"] == {"code": "request_timeout",
                                                               "param": None}
        # the heads never finished: the server closes those connections
        assert all(_closed_by_server(sock) for sock in trickling[1::2])
    finally:
        for sock in trickling:
            sock.close()


@pytest.mark.parametrize(("path", "shape"), [("/v1/messages", "anthropic"),
                                             ("/chat/completions", "openai"),
                                             ("/responses", "openai"),
                                             ("/completions", "openai")])
def test_oversized_headers_get_431_and_bodies_413_in_the_routes_shape(server, path, shape):
    url, key = server.base_url + path, {"x-api-key": server.key}
    big_headers = httpx.post(url, json=ROUTES[path]("hello", stream=False), timeout=30,
                             headers={**key, "x-padding": "a" * 100_000})
    declared = httpx.post(url, content=b"{" + b" " * MAX_BODY + b"}", timeout=30,
                          headers={**key, "content-type": "application/json"})

    def chunks():
        yield b'{"model": "'
        for _ in range(10):
            yield b"x" * 1000

    streamed = httpx.post(url, content=chunks(), timeout=30,
                          headers={**key, "content-type": "application/json"})
    assert (big_headers.status_code, declared.status_code, streamed.status_code) == (
        431, 413, 413)
    for response, code in ((big_headers, "request_headers_too_large"),
                           (declared, "request_too_large"), (streamed, "request_too_large")):
        body = response.json()
        if shape == "anthropic":
            assert body["type"] == "error" and body["b3os"]["code"] == code
            assert body["error"]["type"] in ("invalid_request_error", "request_too_large")
        else:
            assert body["error"]["code"] == code and "message" in body["error"]
    assert _ok(server).status_code == 200
