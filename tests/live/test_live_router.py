"""Nodes behind vLLM's own router: three ``b3os-infer node`` processes with
``[node] standard_api = true`` (scripted engine, each reply naming its node), vllm-router
with its cache-aware policy in front, and the OpenAI SDK as the client, on the router's
standard ``/v1`` paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.binaries import package_dir
from support.servers import free_port, stop, wait_ready

MODEL = "b3os/scripted"
SECRET = "router-test-secret-0123456789abcdef"
NODES = 3


def _node(root: Path, index: int) -> tuple[str, subprocess.Popen[str]]:
    where = root / f"node{index}"
    where.mkdir()
    reply = f"Served by node-{index}."
    (where / "replies.json").write_text(json.dumps({"template": "native", "replies": [
        # a session's first turn takes a while, so the next one arrives while it runs
        {"text": reply, "delay_s": 0.5, "repeat": True, "when": {"last_user_contains": "Turn 0:"}},
        {"text": reply, "repeat": True}]}))
    (where / "node.toml").write_text(
        f'[node]\nstandard_api = true\n[model]\nid = "{MODEL}"\nengine = "scripted"\n'
        'script = "replies.json"\n')
    port = free_port()
    env = {**os.environ, "B3OS_INFER_HOME": str(where), "PYTHONUNBUFFERED": "1",
           "B3OS_INFER_NODE_SECRET": SECRET}
    with (where / "node.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "b3os_infer.cli", "node", "--port", str(port),
             "--config", str(where / "node.toml")],
            env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    return f"http://127.0.0.1:{port}", process


def _router(root: Path, workers: list[str]) -> tuple[str, subprocess.Popen[str]]:
    package_dir("vllm_router")   # a dev dependency: fails clearly when missing
    port = free_port()
    with (root / "router.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "vllm_router.launch_router", "--host", "127.0.0.1",
             "--port", str(port), "--worker-urls", *workers, "--policy", "cache_aware",
             "--api-key", SECRET, "--prometheus-port", str(free_port()),
             "--worker-startup-check-interval", "1", "--log-level", "warning"],
            stdout=log, stderr=subprocess.STDOUT, text=True)
    return f"http://127.0.0.1:{port}", process


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    root = tmp_path_factory.mktemp("router")
    processes = []
    try:
        nodes = []
        for index in range(NODES):
            url, process = _node(root, index)
            processes.append(process)
            nodes.append(url)
        for url, process in zip(nodes, processes, strict=True):
            wait_ready(url + "/health", process, lambda: "see node.log")
        url, process = _router(root, nodes)
        processes.append(process)
        wait_ready(url + "/health", process, lambda: (root / "router.log").read_text())
        yield url, nodes
    finally:
        for process in processes:
            stop(process)


def _prefix(topic: int) -> str:
    """A long system prompt of its own per session, as agents send."""
    return " ".join(f"Rule {i} of project {topic}: keep answers short." for i in range(60))


def _served(client: openai.OpenAI, topic: int, turn: int) -> str:
    reply = client.chat.completions.create(model=MODEL, max_tokens=10, messages=[
        {"role": "system", "content": _prefix(topic)},
        {"role": "user", "content": f"Turn {turn}: go on."}])
    text = reply.choices[0].message.content or ""
    assert text.startswith("Served by node-"), text
    return text.removeprefix("Served by ").rstrip(".")


def test_the_cache_aware_router_spreads_new_prefixes_by_load_and_keeps_each_on_its_node(
        router):
    url, _ = router
    with openai.OpenAI(base_url=url + "/v1", api_key=SECRET, max_retries=0) as client, \
            ThreadPoolExecutor(NODES) as pool:
        # the sessions start together: a prefix no node has cached goes to the least loaded
        starts = []
        for topic in range(NODES):
            starts.append(pool.submit(_served, client, topic, 0))
            time.sleep(0.3)
        picks = {topic: [start.result()] for topic, start in enumerate(starts)}
        for turn in range(1, 4):               # then their turns, interleaved
            for topic, nodes in picks.items():
                nodes.append(_served(client, topic, turn))
    assert len({nodes[0] for nodes in picks.values()}) == NODES, picks
    # every later turn matched its own prefix in the router's tree, so went to its node
    assert all(len(set(nodes)) == 1 for nodes in picks.values()), picks


def test_a_standard_node_has_open_health_vllm_metrics_tokenize_and_guards_its_routes(
        router):
    _, nodes = router
    assert httpx.get(nodes[0] + "/health", timeout=5).status_code == 200
    scraped = httpx.get(nodes[0] + "/metrics", timeout=5).text   # open, as vLLM's
    samples = {s.name: s for family in text_string_to_metric_families(scraped)
               for s in family.samples
               if s.name.startswith("vllm:") and s.labels["model_name"] == MODEL}
    assert set(samples) == {"vllm:num_requests_running", "vllm:num_requests_waiting",
                            "vllm:kv_cache_usage_perc", "vllm:cache_config_info"}
    info = samples["vllm:cache_config_info"]
    assert info.labels["block_size"] == "1" and int(info.labels["num_gpu_blocks"]) > 0
    # the prompt's token ids as the router asks for them: as many as the request counts
    hi = [{"role": "user", "content": "hi"}]
    tokens = httpx.post(nodes[0] + "/tokenize", timeout=5, json={"model": MODEL, "messages": hi},
                        headers={"authorization": f"Bearer {SECRET}"}).json()
    with openai.OpenAI(base_url=nodes[0] + "/v1", api_key=SECRET, max_retries=0) as client:
        usage = client.chat.completions.create(model=MODEL, messages=hi, max_tokens=5).usage
    assert usage is not None and tokens["count"] == len(tokens["tokens"]) == usage.prompt_tokens
    refused = httpx.post(nodes[0] + "/v1/chat/completions", timeout=5, json={
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "not_from_edge"
