"""The fleet of docs/edge.md, deployed as written on a real network: three hosts (network
namespaces on one bridge, each with only its own loopback) — an edge host running PostgreSQL,
Redis and two edges, two node hosts on the scripted engine — and a fourth host for the
clients, which reach the edges over the bridge."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anthropic
import openai
import pytest

from support.deployment import LONG_ASK, MODEL, Deployment, write_configs
from support.doc_fleet import read_recipe
from support.edge import redis_server
from support.lan import Lan, inside, unavailable
from support.postgres import postgres_server

CLIENT_ADDRESS = "10.0.0.9"
NODE = re.compile(r"node-\d+")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    if why := unavailable():
        pytest.skip(f"this test needs network namespaces: {why}")
    recipe = read_recipe()
    root = tmp_path_factory.mktemp("deployment")
    with ExitStack() as stack:
        lan = Lan(str(os.getpid() % 100000))
        stack.callback(lan.close)
        addresses = sorted({c.host for c in recipe.commands})
        hosts = {a: lan.host(f"h{i}", a) for i, a in enumerate(addresses)}
        dirs = {a: root / a for a in addresses}
        for where in dirs.values():
            (where / "home").mkdir(parents=True)
        edge_host = hosts[recipe.of("edge")[0].host]
        with inside(edge_host):   # both on the edge host's loopback
            database_url = stack.enter_context(postgres_server())
            redis_url = stack.enter_context(redis_server())
        write_configs(dirs, recipe, database_url, redis_url)
        fleet = Deployment(recipe, hosts, lan.host("client", CLIENT_ADDRESS), dirs,
                           recipe.secret())
        stack.callback(fleet.stop_all)
        for command in recipe.of("node") + recipe.of("edge"):
            fleet.start(command)
        fleet.wait_nodes_up(2)
        yield fleet


def _key(fleet: Deployment) -> str:
    return fleet.run(fleet.recipe.of("keys")[0]).strip().splitlines()[-1]


def _anthropic(edge: str, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=edge + "/v1/infer", max_retries=0)


def _openai(edge: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=edge + "/v1/infer", max_retries=0)


def _node_of(text: str) -> str:
    found = NODE.search(text)
    assert found, text
    return found.group(0)


def test_the_documented_commands_make_two_edges_that_serve_both_sdks_with_a_key_from_the_database(
        fleet):
    key = _key(fleet)   # `keys create --config edge.toml`: in PostgreSQL, seen by both edges
    assert key.startswith("b3os_")
    served = set()
    with fleet.on_client():
        for edge in fleet.edges():
            with _anthropic(edge, key) as client:
                assert [m.id for m in client.models.list().data] == [MODEL]
                message = client.messages.create(model=MODEL, max_tokens=20, messages=[
                    {"role": "user", "content": "Hello"}])
                with client.messages.stream(model=MODEL, max_tokens=20, messages=[
                        {"role": "user", "content": "Hello again"}]) as stream:
                    streamed = stream.get_final_message()
            with _openai(edge, key) as client:
                chat = client.chat.completions.create(model=MODEL, max_tokens=20, messages=[
                    {"role": "user", "content": "Hello"}])
                response = client.responses.create(model=MODEL, input="Hello",
                                                   max_output_tokens=20)
            texts = [message.content[0].text, streamed.content[0].text,
                     chat.choices[0].message.content or "", response.output_text]
            served |= {_node_of(text) for text in texts}
    assert served <= {"node-5", "node-6"}


def _cut_anthropic(fleet: Deployment, edge: str, key: str, session: str) -> str:
    """A long stream on ``session``; its node killed after the first words: the node's
    name, once the SDK has raised the stream's error event."""
    with fleet.on_client(), _anthropic(edge, key) as client, client.messages.stream(
            model=MODEL, max_tokens=400, messages=[{"role": "user", "content": LONG_ASK}],
            extra_headers={"x-claude-code-session-id": session}) as stream:
        text = ""
        while not NODE.search(text):
            text += next(stream.text_stream)
        victim = _node_of(text)
        fleet.kill(fleet.node_label(victim))
        with pytest.raises(anthropic.APIStatusError) as cut:
            for _ in stream.text_stream:
                pass
    body = cut.value.body
    assert isinstance(body, dict), body
    assert body["error"]["type"] == "api_error" and body["b3os"]["code"] == "node_lost"
    return victim


def _cut_openai(fleet: Deployment, edge: str, key: str, session: str) -> str:
    with fleet.on_client(), _openai(edge, key) as client:
        stream = client.chat.completions.create(
            model=MODEL, max_tokens=400, stream=True, prompt_cache_key=session,
            messages=[{"role": "user", "content": LONG_ASK}])
        text = ""
        while not NODE.search(text):
            chunk = next(stream)
            text += chunk.choices[0].delta.content or "" if chunk.choices else ""
        victim = _node_of(text)
        fleet.kill(fleet.node_label(victim))
        with pytest.raises(openai.APIError) as cut:
            for _ in stream:
                pass
    assert isinstance(cut.value.body, dict) and cut.value.body["code"] == "node_lost"
    return victim


def _served_by(fleet: Deployment, key: str, session: str) -> set[str]:
    """One call of each API through each edge, all on ``session``: the nodes that answered."""
    nodes = set()
    with fleet.on_client():
        for edge in fleet.edges():
            with _anthropic(edge, key) as client:
                message = client.messages.create(
                    model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "Hi"}],
                    extra_headers={"x-claude-code-session-id": session})
                nodes.add(_node_of(message.content[0].text))
            with _openai(edge, key) as client:
                chat = client.chat.completions.create(
                    model=MODEL, max_tokens=20, prompt_cache_key=session,
                    messages=[{"role": "user", "content": "Hi"}])
                nodes.add(_node_of(chat.choices[0].message.content or ""))
    return nodes


def _ledger_requests(fleet: Deployment, key: str, expected: int,
                     timeout: float = 30) -> tuple[int, str]:
    """The key's requests in ``usage --config edge.toml`` (all its models), once they reach
    ``expected`` (a cut stream is settled 5 s after it ended) or the time is up; and what
    the command printed."""
    usage = fleet.recipe.of("keys")[0]
    command = type(usage)(usage.host, ["b3os-infer", "usage", "--config",
                                       usage.option("--config")])
    key_id = key.split("_")[1]
    deadline = time.monotonic() + timeout
    while True:
        printed = fleet.run(command)
        count = sum(int(li.split()[3]) for li in printed.splitlines() if li.startswith(key_id))
        if count >= expected or time.monotonic() > deadline:
            return count, printed
        time.sleep(1)


def test_a_node_killed_mid_stream_cuts_with_the_error_event_and_its_sessions_move_and_return(
        fleet, tmp_path: Path):
    key, session = _key(fleet), "session-killed-node-1"
    first, second = fleet.edges()
    victim = _cut_anthropic(fleet, first, key, session)
    survivor = ({"node-5", "node-6"} - {victim}).pop()
    # every new request of that session, on both edges and both APIs, goes to the other node
    assert _served_by(fleet, key, session) == {survivor}
    assert all(fleet.nodes_up(edge) == 1 for edge in fleet.edges())
    fleet.restart(fleet.node_label(victim))     # the same documented command
    fleet.wait_nodes_up(2)
    assert _served_by(fleet, key, session) == {victim}   # home again, on every edge
    # the same through OpenAI's SDK, on the other edge
    assert _cut_openai(fleet, second, key, session) == victim
    assert _served_by(fleet, key, session) == {survivor}
    fleet.restart(fleet.node_label(victim))
    fleet.wait_nodes_up(2)
    # 2 cut streams and 3 rounds of 4 calls: a ledger row for each
    count, printed = _ledger_requests(fleet, key, expected=14)
    assert count == 14, printed
