"""A fleet on loopback: two nodes, two edges sharing one Redis, driven with the SDKs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from support.edge import redis_server
from support.servers import cli, free_port, stop

MODEL = "b3os/smollm2-135m-instruct"
SECRET = "fleet-test-secret-0123456789abcdef"
HI = [{"role": "user", "content": "Reply with one word: yes"}]


@dataclass
class Fleet:
    home: Path
    edges: list[str]
    nodes: list[str]
    processes: dict[str, subprocess.Popen[str]]

    def key(self) -> str:
        return cli(self.home, "keys", "create", "--name", "fleet").stdout.strip().splitlines()[-1]


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home), "PYTHONUNBUFFERED": "1",
           "B3OS_INFER_NODE_SECRET": SECRET}
    return subprocess.Popen([sys.executable, "-m", "b3os_infer.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_edge(root: str, process: subprocess.Popen[str], nodes_up: int) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the edge exited:\n{process.stdout.read()}")  # type: ignore
        try:
            nodes = httpx.get(root + "/healthz", timeout=2).json()["nodes"]
            if sum(n["up"] for n in nodes.values()) == nodes_up:
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the edge at {root} never saw {nodes_up} nodes up")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    home = tmp_path_factory.mktemp("fleet")
    processes: dict[str, subprocess.Popen[str]] = {}
    with redis_server() as redis_url:
        (home / "node.toml").write_text("[engine]\nparallel = 2\n")
        (home / "edge.toml").write_text(
            f'[edge]\nredis_url = "{redis_url}"\n'
            "[limits.default]\nrequests_per_minute = 1\n")
        nodes = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
        edges = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
        try:
            for url in nodes:
                processes[url] = _start(home, "node", "--port", url.rsplit(":", 1)[1],
                                        "--config", str(home / "node.toml"))
            node_args = [arg for url in nodes for arg in ("--node", url)]
            for url in edges:
                processes[url] = _start(home, "edge", "--port", url.rsplit(":", 1)[1],
                                        "--config", str(home / "edge.toml"), *node_args)
            for url in edges:
                _wait_edge(url, processes[url], nodes_up=2)
            yield Fleet(home, edges, nodes, processes)
        finally:
            for process in processes.values():
                stop(process)


def test_a_node_answers_only_its_edges(fleet):
    response = httpx.post(fleet.nodes[0] + "/v1/infer/v1/messages", headers={
        "x-api-key": fleet.key()}, json={"model": MODEL, "max_tokens": 3, "messages": HI})
    assert response.status_code == 401
    assert response.json()["b3os"]["code"] == "not_from_edge"


def test_both_apis_stream_through_the_edge(fleet):
    base = fleet.edges[0] + "/v1/infer"
    with anthropic.Anthropic(api_key=fleet.key(), base_url=base, max_retries=0) as client:
        assert [m.id for m in client.models.list().data] == [MODEL]
        with client.messages.stream(model=MODEL, max_tokens=5, messages=HI) as stream:
            assert stream.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
            message = stream.get_final_message()
        assert message.usage.output_tokens > 0
        # the node's queue time (over when its headers left), the node's total, the edge's
        assert re.fullmatch(r"queue;dur=[\d.]+, node;dur=[\d.]+, total;dur=[\d.]+",
                            stream.response.headers["server-timing"])
    with openai.OpenAI(api_key=fleet.key(), base_url=base, max_retries=0) as client:
        chunks = list(client.chat.completions.create(
            model=MODEL, max_tokens=5, messages=HI, stream=True,
            stream_options={"include_usage": True}))
        assert chunks[-1].usage.completion_tokens > 0
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model="nobody/model", max_tokens=5, messages=HI)
        assert missing.value.code == "model_not_available"


def test_two_edges_share_one_budget_in_redis(fleet):
    key = fleet.key()
    clients = [anthropic.Anthropic(api_key=key, base_url=edge + "/v1/infer", max_retries=0)
               for edge in fleet.edges]
    try:
        # one request a minute: the first edge spends it, the second one knows
        clients[0].messages.create(model=MODEL, max_tokens=3, messages=HI)
        with pytest.raises(anthropic.RateLimitError) as refused:
            clients[1].messages.create(model=MODEL, max_tokens=3, messages=HI)
        assert int(refused.value.response.headers["retry-after"]) >= 1
    finally:
        for client in clients:
            client.close()
    printed = cli(fleet.home, "usage").stdout
    line = next(li for li in printed.splitlines() if key.split("_")[1] in li)
    assert line.split()[3:5] == ["2", "1"]   # 2 requests, 1 refused


def test_a_response_stored_through_one_edge_is_found_through_the_other(fleet):
    key = fleet.key()
    first, second = (openai.OpenAI(api_key=key, base_url=edge + "/v1/infer", max_retries=0)
                     for edge in fleet.edges)
    other = openai.OpenAI(api_key=fleet.key(), base_url=fleet.edges[1] + "/v1/infer",
                          max_retries=0)
    try:
        made = first.responses.create(model=MODEL, input="Reply with one word: yes",
                                      max_output_tokens=3)
        kept = second.responses.retrieve(made.id)
        assert kept.model_dump() == made.model_dump()
        assert [i.type for i in second.responses.input_items.list(made.id).data] == \
            ["message"]
        # the stored turn is in the next turn's prompt, whichever node counts it (free)
        alone = second.responses.input_tokens.count(model=MODEL, input="Again?")
        continued = second.responses.input_tokens.count(model=MODEL, input="Again?",
                                                         previous_response_id=made.id)
        assert continued.input_tokens > alone.input_tokens
        with pytest.raises(openai.NotFoundError):
            other.responses.retrieve(made.id)
        second.responses.delete(made.id)
        with pytest.raises(openai.NotFoundError):
            first.responses.retrieve(made.id)
    finally:
        for client in (first, second, other):
            client.close()


def test_keeps_serving_when_a_node_stops(fleet):
    stop(fleet.processes[fleet.nodes[0]])
    # Until its next health check the edge may still pick the stopped node (when it is the
    # home of a request's key): the connection is refused, the edge marks it down and sends
    # the request to the other node. Three sessions, so that some are likely at home there.
    for session in range(3):
        with anthropic.Anthropic(api_key=fleet.key(), base_url=fleet.edges[0] + "/v1/infer",
                                 max_retries=0) as client:
            reply = client.messages.create(model=MODEL, max_tokens=3, messages=HI,
                                           extra_headers={"x-session-id": f"s{session}"})
            assert reply.usage.output_tokens > 0
    deadline = time.monotonic() + 10   # the health loop runs every 2 s
    while True:
        health = httpx.get(fleet.edges[0] + "/healthz").json()["nodes"]
        if health[fleet.nodes[0]]["up"] is False or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert health[fleet.nodes[0]]["up"] is False and health[fleet.nodes[1]]["up"] is True
