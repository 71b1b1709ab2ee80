"""Two real GGUF models in one node, loaded on demand (docs/models.md, "Loading on demand"):
listed unloaded on both APIs, loaded by their first request (concurrent ones share the load,
the wait shows in ``server-timing``), the node's bound of one loaded model unloading the
least recently used, keep_alive unloading an idle one, and a damaged GGUF answering 503 while
the others serve. Both models are the embedded SmolLM2 file under two ids.
By hand: ``flock /tmp/b3os-heavy.lock .venv/bin/pytest tests/live/test_live_load_on_demand.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

import anthropic
import httpx
import openai
import pytest

from b3os_infer.node.cards import default_model_path
from support.servers import cli, free_port, start_server

HI = [{"role": "user", "content": "Name one river in Oregon."}]
KEEP_ALIVE_S = 4


@dataclass
class Node:
    root: str
    key: str
    process: Popen[str]

    @property
    def base(self) -> str:
        return self.root + "/v1/infer"

    def health(self) -> dict:
        return httpx.get(self.root + "/healthz", timeout=10).json()

    def states(self) -> tuple[dict[str, str], dict[str, str]]:
        with openai.OpenAI(api_key=self.key, base_url=self.base, max_retries=0) as client:
            listed = {m.id: (m.model_extra or {})["b3os"]["state"]
                      for m in client.models.list().data}
        with anthropic.Anthropic(api_key=self.key, base_url=self.base, max_retries=0) as client:
            paged = {m.id: (m.model_extra or {})["b3os"]["state"]
                     for m in client.models.list().data}
        return listed, paged

    def chat_states(self) -> dict[str, str]:
        """The listing's states, the same on both APIs (the damaged model is not listed)."""
        listed, paged = self.states()
        assert listed == paged
        return listed


def config(home: Path, truncated: Path) -> Path:
    gguf = default_model_path()
    models = "".join(f"""
[[models]]
id = "{model_id}"
path = "{gguf}"
context_window = 4096
preload = false
keep_alive = {keep}
""" for model_id, keep in (("b3os/first", KEEP_ALIVE_S), ("b3os/second", -1)))
    path = home / "node.toml"
    path.write_text(f"""{models}
[[models]]
id = "b3os/damaged"
path = "{truncated}"
preload = false

[engine]
kv_memory_mib = 256

[loading]
max_models = 1
installed = false
""")
    return path


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    home = tmp_path_factory.mktemp("home")
    truncated = home / "damaged.gguf"
    data = default_model_path().read_bytes()
    truncated.write_bytes(data[: len(data) * 3 // 5])       # a download cut short
    key = cli(home, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port, "--config", str(config(home, truncated)))
    node = Node(f"http://127.0.0.1:{port}", key, process)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            node.health()      # 503: the damaged model is named there; the others serve
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    yield node
    process.terminate()
    process.wait(timeout=30)


def server_log(node: Node) -> str:
    node.process.terminate()
    output, _ = node.process.communicate(timeout=30)
    return output


def message(node: Node, model: str) -> tuple[str, str]:
    """An Anthropic message's text and its ``server-timing`` header."""
    with anthropic.Anthropic(api_key=node.key, base_url=node.base, max_retries=0) as client:
        raw = client.messages.with_raw_response.create(model=model, max_tokens=12,
                                                       messages=HI)
        return raw.parse().content[0].text, raw.headers.get("server-timing", "")


def streamed(node: Node, model: str) -> str:
    with openai.OpenAI(api_key=node.key, base_url=node.base, max_retries=0) as client:
        stream = client.chat.completions.create(model=model, max_tokens=12, stream=True,
                                                temperature=0, messages=HI)
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_models_load_on_demand_within_the_bound_and_unload_when_idle(node: Node) -> None:
    assert node.chat_states() == {"b3os/first": "unloaded", "b3os/second": "unloaded"}
    health = node.health()
    assert "could not be read" in health["models"]["b3os/damaged"]["problem"]

    text, timing = message(node, "b3os/first")
    assert text and timing.startswith("load;dur=")
    assert node.chat_states() == {"b3os/first": "loaded", "b3os/second": "unloaded"}
    _, again = message(node, "b3os/first")
    assert "load;" not in again

    with ThreadPoolExecutor(3) as pool:                       # three first requests at once
        texts = list(pool.map(lambda _: streamed(node, "b3os/second"), range(3)))
    assert all(texts) and len(set(texts)) == 1                # greedy: one answer, three times
    assert node.chat_states() == {"b3os/first": "unloaded", "b3os/second": "loaded"}
    assert node.health()["models"]["b3os/second"]["keep_alive_left"] == -1

    message(node, "b3os/first")        # room for one: second, least recently used, goes
    assert node.chat_states() == {"b3os/first": "loaded", "b3os/second": "unloaded"}
    deadline = time.monotonic() + KEEP_ALIVE_S + 15
    while node.health()["models"]["b3os/first"]["state"] == "loaded":
        assert time.monotonic() < deadline, "keep_alive did not unload the idle model"
        time.sleep(0.5)
    assert node.chat_states() == {"b3os/first": "unloaded", "b3os/second": "unloaded"}


def test_a_damaged_gguf_answers_503_on_both_apis_while_the_others_serve(node: Node) -> None:
    with anthropic.Anthropic(api_key=node.key, base_url=node.base, max_retries=0) as client, \
            pytest.raises(anthropic.APIStatusError) as refused:
        client.messages.create(model="b3os/damaged", max_tokens=8, messages=HI)
    assert refused.value.status_code == 503
    assert refused.value.body["b3os"]["code"] == "model_load_failed"
    with openai.OpenAI(api_key=node.key, base_url=node.base, max_retries=0) as client, \
            pytest.raises(openai.APIStatusError) as refused_too:
        client.chat.completions.create(model="b3os/damaged", max_tokens=8, messages=HI)
    assert refused_too.value.status_code == 503 and refused_too.value.code == "model_load_failed"
    assert message(node, "b3os/second")[0]


def test_the_log_shows_each_load_once_and_why_each_unload_happened(node: Node) -> None:
    output = server_log(node)
    # second: the three concurrent first requests (one load), then the damaged-model test's
    assert output.count(": loading b3os/second (") == 2
    assert output.count(": loading b3os/first (") == 2
    assert "unloading b3os/first (least recently used) to make room for b3os/second" in output
    assert "unloading b3os/second (least recently used) to make room for b3os/first" in output
    assert "unloading b3os/first: idle for" in output and f"keep_alive {KEEP_ALIVE_S}" in output
    assert "b3os/damaged cannot be served" in output
    assert "SmolLM2-135M-Instruct.Q4_1.gguf: 100% of its weights read" in output
