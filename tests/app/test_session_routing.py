"""Agent sessions keep their node: three nodes, two edges, 12 sessions of 5 turns.

The nodes are real node apps on the scripted engine, reached in process by host name
(``node-a`` ... ``node-c``, so the hashing is the same on every run); each of the two
edges is the real forwarder over a node pool of its own, and the turns alternate between
them. Each request's body is Claude Code's recorded first request (``metadata.user_id``
with the session's id, the session's own task) with the earlier turns appended. A request
is cold when it lands on a node that has not served its session before (the engine of
each node keeps what it received); every other request finds its session's previous
prompt in that node's prefix cache (the scripted engine reports the longest prefix it has
seen as cached). Round robin measured 2.75 cold requests per session.

The last test runs the whole edge app (keys, middleware, its health loop) in front of two
node apps on loopback ports, and reads what it counts on its ``/metrics``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Message

from b3os_infer.app import create_edge_app, create_node_app
from b3os_infer.compose import scripted_model
from b3os_infer.config import ModelBasics
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.fleet import forward
from b3os_infer.edge.fleet.callbacks import Tickets
from b3os_infer.edge.fleet.forward import Forwarder
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.registry import ModelRegistry
from b3os_infer.observe.metrics import Metrics
from support.servers import free_port
from support.uvicorn_serving import serving

MODEL = "b3os/scripted"
SECRET = "session-routing-tests-node-secret"
NODES = ["http://node-a:9000", "http://node-b:9000", "http://node-c:9000"]
SESSIONS, TURNS = 12, 5
FIXTURE = Path(__file__).parents[1] / "fixtures" / "claude_code_first_request.json"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def _lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """The app's startup and shutdown, as a server runs them."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    task: asyncio.Task[Any] = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await outbox.get()
        await task


class Nodes(httpx.AsyncBaseTransport):
    """Each node app by its host name; a killed one refuses connections."""

    def __init__(self, apps: dict[str, ASGIApp]) -> None:
        self.transports = {host: httpx.ASGITransport(app=app) for host, app in apps.items()}
        self.killed: set[str] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host in self.killed:
            raise httpx.ConnectError("connection refused", request=request)
        return await self.transports[request.url.host].handle_async_request(request)


@dataclass
class Fleet:
    engines: dict[str, ScriptedEngine]
    nodes: Nodes
    edges: list[Forwarder]
    metrics: list[Metrics]
    client: httpx.AsyncClient
    served: dict[int, list[str]] = field(default_factory=dict)   # session -> node per turn
    # session -> per turn: (prompt tokens, of which read from the node's prefix cache)
    usage: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def kill(self, host: str) -> None:
        self.nodes.killed.add(host)

    def cold(self) -> dict[int, int]:
        """Per session: the turns that landed on a node it had not been on before."""
        return {s: sum(1 for i, host in enumerate(hosts) if host not in hosts[:i])
                for s, hosts in self.served.items()}

    def warm_turns_missing_their_prefix(self) -> list[tuple[int, int]]:
        """(session, turn) of the turns that were not cold and yet did not find the
        session's previous prompt in the node's cache (up to 64 tokens of slack: the
        previous prompt's generation prompt)."""
        missing = []
        for session, hosts in self.served.items():
            usage = self.usage[session]
            for turn in range(1, len(hosts)):
                if hosts[turn] in hosts[:turn] and usage[turn][1] < usage[turn - 1][0] - 64:
                    missing.append((session, turn))
        return missing

    def sessions_per_node(self) -> dict[str, int]:
        return {host: sum(1 for hosts in self.served.values() if hosts[0] == host)
                for host in self.engines}


def _engine() -> ScriptedEngine:
    return ScriptedEngine(Script((Reply(text="Done.", repeat=True),), context_window=262_144,
                                 prefix_cache=True))


@asynccontextmanager
async def _fleet() -> AsyncIterator[Fleet]:
    engines = {httpx.URL(url).host: _engine() for url in NODES}
    apps: dict[str, ASGIApp] = {}
    for host, engine in engines.items():
        registry = ModelRegistry()
        registry.add(scripted_model(ModelBasics(id=MODEL), engine,
                                    SECRET.encode()))
        apps[host] = create_node_app(registry, SECRET, Metrics())
    nodes = Nodes(apps)
    metrics = [Metrics(), Metrics()]
    async with AsyncExitStack() as stack:
        for app in apps.values():
            await stack.enter_async_context(_lifespan(app))
        client = await stack.enter_async_context(httpx.AsyncClient(transport=nodes))
        edges = []
        for edge_metrics in metrics:
            pool = NodePool(NODES, SECRET)
            await pool.refresh(client)
            forwarder = Forwarder(pool, Tickets(), SECRET, "http://edge", edge_metrics)
            forwarder.client = client
            edges.append(forwarder)
        yield Fleet(engines, nodes, edges, metrics, client)


def _first_request(session: int, named: bool) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(FIXTURE.read_text())["request"]
    body["model"], body["stream"], body["max_tokens"] = MODEL, False, 64
    del body["thinking"], body["context_management"], body["output_config"]
    body["messages"][0]["content"][-1]["text"] = f"Task {session}: list the files here."
    if named:
        body["metadata"]["user_id"] = json.dumps({"device_id": "d" * 64, "account_uuid": "",
                                                  "session_id": _session_id(session)})
    else:
        del body["metadata"]
    return body


def _session_id(session: int) -> str:
    return f"0b3c5e1a-0000-4000-8000-{session:012d}"


def _next_turn(body: dict[str, Any], turn: int) -> dict[str, Any]:
    later = copy.deepcopy(body)
    later["messages"] += [{"role": "assistant", "content": "Done."},
                          {"role": "user", "content": f"Now step {turn}."}]
    return later


async def _send(edge: Forwarder, body: dict[str, Any],
                headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The status and the reply's usage."""
    raw = json.dumps(body).encode()
    scope = {"type": "http", "method": "POST", "path": "/v1/infer/v1/messages",
             "headers": [(b"content-type", b"application/json"),
                         *((k.encode(), v.encode()) for k, v in headers.items())],
             "query_string": b"", "state": {"request_id": "req_test"}}
    messages = [{"type": "http.request", "body": raw, "more_body": False}]
    sent: list[Message] = []

    async def receive() -> Message:
        if messages:
            return messages.pop()
        await asyncio.sleep(60)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await edge(scope, receive, send)  # type: ignore[arg-type]
    reply = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    return int(sent[0]["status"]), reply.get("usage", reply)


async def _run(fleet: Fleet, named: bool, kill_after: int | None = None) -> None:
    """Turn by turn, every session once per turn in a shuffled order (seeded), the edges
    alternating; ``kill_after`` requests in, the node of session 0 is killed."""
    bodies = {s: _first_request(s, named) for s in range(SESSIONS)}
    sent = 0
    for turn in range(TURNS):
        order = list(range(SESSIONS))
        random.Random(turn).shuffle(order)
        for session in order:
            if sent == kill_after:
                fleet.kill(fleet.served[0][-1])
            headers = {"x-claude-code-session-id": _session_id(session)} if named else {}
            before = {host: len(e.received) for host, e in fleet.engines.items()}
            status, usage = await _send(fleet.edges[sent % 2], bodies[session], headers)
            assert status == 200, usage
            host = next(h for h, e in fleet.engines.items() if len(e.received) > before[h])
            fleet.served.setdefault(session, []).append(host)
            cached = usage["cache_read_input_tokens"]
            fleet.usage.setdefault(session, []).append((usage["input_tokens"] + cached,
                                                        cached))
            bodies[session] = _next_turn(bodies[session], turn)
            sent += 1


def _decisions(metrics: Metrics) -> dict[tuple[str, str], float]:
    counts: dict[tuple[str, str], float] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "b3os_edge_routing_decisions_total":
                key = (sample.labels["decision"], sample.labels["key"])
                counts[key] = counts.get(key, 0) + sample.value
    return counts


@pytest.mark.anyio
@pytest.mark.parametrize("named", [True, False], ids=["session-named", "prefix-only"])
async def test_twelve_sessions_pay_one_cold_request_each_and_no_node_holds_over_half(named):
    async with _fleet() as fleet:
        await _run(fleet, named)
    cold = fleet.cold()
    print(f"cold requests per session ({'named' if named else 'prefix'}): "
          f"{sum(cold.values()) / SESSIONS:.2f}; sessions per node: {fleet.sessions_per_node()}")
    assert sum(cold.values()) / SESSIONS <= 1.1
    assert all(count == 1 for count in cold.values())
    assert max(fleet.sessions_per_node().values()) <= SESSIONS // 2
    assert fleet.warm_turns_missing_their_prefix() == []
    assert sum(cached for turns in fleet.usage.values() for _, cached in turns) > 0
    key = "session" if named else "prefix"
    assert [_decisions(m) for m in fleet.metrics] == [{("affine", key): 30.0}] * 2


@pytest.mark.anyio
async def test_the_same_run_routed_without_keys_pays_over_two_cold_requests_per_session(
        monkeypatch):
    # what the edge did before: no key, so the requests take turns over the nodes
    monkeypatch.setattr(forward, "routing_key", lambda headers, body: None)
    async with _fleet() as fleet:
        await _run(fleet, named=True)
    cold = fleet.cold()
    print(f"cold requests per session, taking turns: {sum(cold.values()) / SESSIONS:.2f}")
    assert sum(cold.values()) / SESSIONS > 2


@pytest.mark.anyio
async def test_with_a_node_killed_half_way_only_the_sessions_that_lived_on_it_move():
    async with _fleet() as fleet:
        await _run(fleet, named=True, kill_after=SESSIONS * TURNS // 2)
    killed = next(iter(fleet.nodes.killed))
    lived_there = {s for s, hosts in fleet.served.items() if hosts[0] == killed}
    cold = fleet.cold()
    print(f"killed {killed}, home of sessions {sorted(lived_there)}; cold per session {cold}")
    assert lived_there
    assert {s for s, n in cold.items() if n == 2} == lived_there
    assert {s for s, n in cold.items() if n == 1} == set(range(SESSIONS)) - lived_there
    assert fleet.warm_turns_missing_their_prefix() == []
    for session in lived_there:   # moved once, then stayed
        hosts = fleet.served[session]
        moved_to = {h for h in hosts if h != killed}
        assert len(moved_to) == 1 and hosts[-1] in moved_to


@pytest.mark.anyio
async def test_each_nodes_prefix_cache_hits_appear_in_the_edges_metrics():
    async with _fleet() as fleet:
        await _run(fleet, named=True)
        pool = fleet.edges[0].pool
        await pool.refresh(fleet.client)   # a health check reads each node's counters
        fleet.metrics[0].watch_node_caches(lambda: {n.url: n.cache for n in pool.nodes})
        exposition = fleet.metrics[0].exposition().decode()
    hits = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "b3os_edge_node_prefix_cache_hits_total":
                hits[sample.labels["node"]] = sample.value
    cached = {url: 0 for url in NODES}
    for session, hosts in fleet.served.items():
        for host, (_, read) in zip(hosts, fleet.usage[session], strict=True):
            cached[f"http://{host}:9000"] += read
    assert hits == cached and all(value > 0 for value in hits.values())


async def _host_of(fleet: Fleet, edge: Forwarder, body: dict[str, Any],
                   headers: dict[str, str]) -> str:
    before = {host: len(e.received) for host, e in fleet.engines.items()}
    status, usage = await _send(edge, body, headers)
    assert status == 200, usage
    return next(h for h, e in fleet.engines.items() if len(e.received) > before[h])


@pytest.mark.anyio
async def test_a_busy_session_node_sends_the_turn_to_the_least_loaded_node_then_home_again():
    async with _fleet() as fleet:
        edge, body = fleet.edges[0], _first_request(0, named=True)
        headers = {"x-claude-code-session-id": _session_id(0)}
        home = await _host_of(fleet, edge, body, headers)
        node = next(n for n in edge.pool.nodes if httpx.URL(n.url).host == home)
        node.in_flight[MODEL] = 20     # as if this edge had 20 requests under way there
        elsewhere = await _host_of(fleet, edge, _next_turn(body, 0), headers)
        node.in_flight[MODEL] = 0
        again = await _host_of(fleet, edge, _next_turn(_next_turn(body, 0), 1), headers)
        in_flight = [n.load(MODEL) for n in edge.pool.nodes]
    assert elsewhere != home and again == home
    assert _decisions(fleet.metrics[0]) == {("affine", "session"): 2.0,
                                            ("fallback", "session"): 1.0}
    assert in_flight == [0, 0, 0]   # every request the edge sent has finished



def _scraped(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(sample.labels, sample.value)
            for family in text_string_to_metric_families(exposition)
            for sample in family.samples if sample.name == name]


@pytest.mark.anyio
async def test_the_edge_app_keeps_sessions_on_their_nodes_and_counts_it_in_its_metrics(
        tmp_path):
    keys = KeyStore(open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}"))
    _, key = keys.create("app", ("admin",))
    engines = {free_port(): _engine() for _ in range(2)}
    node_apps = {}
    for port, engine in engines.items():
        registry = ModelRegistry()
        registry.add(scripted_model(ModelBasics(id=MODEL), engine,
                                    SECRET.encode()))
        node_apps[port] = create_node_app(registry, SECRET)
    urls = [f"http://127.0.0.1:{port}" for port in engines]
    edge_port = free_port()
    edge_url = f"http://127.0.0.1:{edge_port}"
    edge = create_edge_app(EdgeState.for_keys(keys), NodePool(urls, SECRET, interval=0.2),
                           SECRET, edge_url)
    served: dict[int, set[int]] = {}
    async with AsyncExitStack() as stack:
        for port, app in node_apps.items():
            await stack.enter_async_context(serving(app, port))
        await stack.enter_async_context(serving(edge, edge_port))
        http = await stack.enter_async_context(httpx.AsyncClient(
            base_url=edge_url, headers={"x-api-key": key}, timeout=30))
        bodies = {s: _first_request(s, named=False) for s in range(6)}
        for turn in range(3):
            for session, body in bodies.items():
                before = {port: len(e.received) for port, e in engines.items()}
                response = await http.post("/v1/infer/v1/messages", json=body,
                                           headers={"x-session-id": f"s{session}"})
                assert response.status_code == 200, response.text
                served.setdefault(session, set()).update(
                    port for port, e in engines.items() if len(e.received) > before[port])
                bodies[session] = _next_turn(body, turn)
        await asyncio.sleep(0.5)   # a health check or two: the nodes' cache counters
        exposition = (await http.get("/metrics")).text
    assert all(len(ports) == 1 for ports in served.values())
    decisions = _scraped(exposition, "b3os_edge_routing_decisions_total")
    assert decisions == [({"model": MODEL, "decision": "affine", "key": "session"}, 18.0)]
    # every node that served a session reports the later turns' prefixes as cache hits
    hits = _scraped(exposition, "b3os_edge_node_prefix_cache_hits_total")
    serving_nodes = {f"http://127.0.0.1:{port}" for ports in served.values() for port in ports}
    assert {labels["node"] for labels, _ in hits} == serving_nodes
    assert all(value > 0 for _, value in hits)
