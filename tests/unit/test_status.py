"""``b3os-infer status``: what it reads from a server and how it shows it."""

from __future__ import annotations

import httpx
import pytest

from b3os_infer.status import StatusError, read, render

HEALTH = {"status": "unhealthy", "resident_bytes": 3 * 2**30, "queues": {},
          "models": {
              "b3os/coder": {"healthy": True, "active": 2, "waiting": 1, "state": "loaded",
                             "memory_bytes": 1536 * 2**20, "keep_alive_left": 250},
              "b3os/big": {"healthy": True, "active": 0, "waiting": 0, "state": "unloaded",
                           "memory_bytes": 0},
              "b3os/remote": {"healthy": False, "active": 0, "waiting": 0,
                              "problem": "the engine at http://gpu1 serves a, not 'b'"}}}
LISTING = {"data": [
    {"id": "b3os/coder", "b3os": {"kind": "chat", "device": "cpu", "context_window": 32768,
                                  "max_output_tokens": 8192}},
    {"id": "b3os/big", "b3os": {"kind": "chat", "device": "cpu", "context_window": 32768,
                                "max_output_tokens": 8192}},
    {"id": "b3os/remote", "b3os": {"kind": "chat", "device": None, "context_window": 4096,
                                   "max_output_tokens": 2048}}]}


def server(seen: list[httpx.Request], listing_status: int = 200) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/healthz":
            return httpx.Response(503, json=HEALTH)
        if listing_status != 200:
            return httpx.Response(listing_status, json={"error": {"message": "invalid key"}})
        return httpx.Response(200, json=LISTING)
    return httpx.MockTransport(answer)


def test_with_a_key_each_model_shows_its_state_device_window_memory_keep_alive_and_work():
    seen: list[httpx.Request] = []
    table = render(read("http://h:8000/", "b3os_k", server(seen))).splitlines()
    assert table[0].split() == ["MODEL", "KIND", "STATE", "DEVICE", "WINDOW", "OUTPUT",
                                "MEMORY", "UNTIL", "RUNNING", "WAITING"]
    assert table[1].split() == ["b3os/coder", "chat", "ready", "cpu", "32,768", "8,192",
                                "1,536", "MiB", "4m", "10s", "2", "1"]
    assert table[2].split() == ["b3os/big", "chat", "unloaded", "cpu", "32,768", "8,192",
                                "-", "-", "0", "0"]
    assert table[3].split() == ["b3os/remote", "chat", "unavailable", "-", "4,096", "2,048",
                                "-", "-", "0", "0"]
    assert "server http://h:8000: resident memory 3,072 MiB" in table
    assert "b3os/remote: the engine at http://gpu1 serves a, not 'b'" in table
    assert seen[1].headers["authorization"] == "Bearer b3os_k"


def test_without_a_key_only_health_is_read_and_the_table_says_what_is_missing():
    seen: list[httpx.Request] = []
    text = render(read("http://h:8000", None, server(seen)))
    assert [r.url.path for r in seen] == ["/healthz"]
    assert text.splitlines()[1].split()[:4] == ["b3os/coder", "-", "ready", "-"]
    assert "need B3OS_API_KEY" in text


def test_a_refused_listing_is_an_error_with_the_servers_message():
    with pytest.raises(StatusError, match="401: invalid key"):
        read("http://h:8000", "bad", server([], listing_status=401))


def test_a_model_never_unloaded_shows_forever():
    health = {"models": {"m": {"healthy": True, "active": 0, "waiting": 0, "state": "loaded",
                               "memory_bytes": 2**20, "keep_alive_left": -1}}}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=health))
    assert render(read("http://h", None, transport)).splitlines()[1].split()[6:9] == \
        ["1", "MiB", "forever"]


def test_no_server_is_an_error_that_says_how_to_start_one():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)
    with pytest.raises(StatusError, match="no server answers at http://h:8000"):
        read("http://h:8000", None, httpx.MockTransport(refuse))
