"""A fleet on loopback (one edge, one node on the scripted engine): clients that give up
while the node waits for admission at the edge (the long-poll) or in a prefill free the
edge's queue and the node's engine at once (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.reliability_server import MODEL, ROUTES, write_config
from support.servers import cli, free_port, stop

SECRET = "reliability-fleet-secret-0123456789"


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home), "PYTHONUNBUFFERED": "1",
           "B3OS_INFER_NODE_SECRET": SECRET}
    return subprocess.Popen([sys.executable, "-m", "b3os_infer.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _edge_health(edge: str) -> dict[str, object]:
    body: dict[str, object] = httpx.get(edge + "/healthz", timeout=5).json()
    return body


def _wait_up(edge: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            nodes = _edge_health(edge)["nodes"]
            if all(n["up"] for n in nodes.values()):  # type: ignore[attr-defined]
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError("the node never came up behind the edge")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str, Path]]:
    home = tmp_path_factory.mktemp("fleet")
    config = write_config(home, concurrency={"default": {"running": 4, "waiting": 64}})
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    node, edge = (f"http://127.0.0.1:{free_port()}" for _ in range(2))
    processes = [_start(home, "node", "--port", node.rsplit(":", 1)[1], "--config",
                        str(config))]
    try:
        processes.append(_start(home, "edge", "--port", edge.rsplit(":", 1)[1], "--config",
                                str(config), "--node", node))
        _wait_up(edge, processes[1])
        yield edge, node, key, home
    finally:
        for process in processes:
            stop(process)


def _busy(edge: str, node: str) -> dict[str, int]:
    queue = _edge_health(edge)["queues"].get(MODEL, {"running": 0, "waiting": 0})  # type: ignore[attr-defined]
    engine = httpx.get(node + "/healthz", headers={"x-b3os-node-secret": SECRET},
                       timeout=5).json()["models"][MODEL]
    return {"queue_running": queue["running"], "queue_waiting": queue["waiting"],
            "engine_waiting": engine["waiting"] + engine["active"]}


def _wait_for(edge: str, node: str, wanted: dict[str, int]) -> dict[str, int]:
    deadline = time.monotonic() + 30
    while (state := _busy(edge, node)) != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
    return state


def test_clients_that_give_up_during_the_admission_long_poll_free_the_edge_queue(fleet):
    """20 streaming clients: 4 admitted (in a 30 s prefill on the node), 16 waiting in the
    edge's queue through the node's admission long-poll; they give up together."""
    edge, node, key, home = fleet

    async def stream(client: httpx.AsyncClient, path: str) -> None:
        async with client.stream("POST", path, json=ROUTES[path]("PREFILL")) as response:
            async for _ in response.aiter_raw():
                pass

    async def run() -> dict[str, int]:
        async with httpx.AsyncClient(base_url=edge + "/v1/infer", timeout=60,
                                     headers={"x-api-key": key}) as client:
            tasks = [asyncio.create_task(stream(client, path))
                     for path in ["/v1/messages", "/chat/completions"] * 10]
            held = await asyncio.to_thread(_wait_for, edge, node, {
                "queue_running": 4, "queue_waiting": 16, "engine_waiting": 4})
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            return held

    held = asyncio.run(run())
    assert held == {"queue_running": 4, "queue_waiting": 16, "engine_waiting": 4}
    assert _wait_for(edge, node, {"queue_running": 0, "queue_waiting": 0,
                                  "engine_waiting": 0}) == {
        "queue_running": 0, "queue_waiting": 0, "engine_waiting": 0}
    answer = httpx.post(edge + "/v1/infer/chat/completions", headers={"x-api-key": key},
                        json=ROUTES["/chat/completions"]("hello", stream=False), timeout=30)
    assert answer.json()["choices"][0]["message"]["content"] == "Hello there, friend."
