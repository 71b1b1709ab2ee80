"""The nodes behind an edge: which are up, which models each serves, and how busy each is.

Every few seconds the edge asks each node for its health and both model listings; a node
that fails is left out until it answers again, and one that fails a forwarded request
(refused, timed out, reset) is marked down at once. A node's load for a model is the
larger of what its ``/healthz`` last reported (requests running and waiting in that
model's engine, from every edge) and the requests this edge has sent it and not yet seen
finish (fresh between two health checks). Each check also reads the node's prefix-cache
counters from its ``/metrics`` (``node_cache.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from ...errors import Overloaded, model_not_available
from ...http.formats import BASE
from .node_cache import read_node_cache
from .protocol import SECRET_HEADER

log = logging.getLogger(__name__)


@dataclass
class Node:
    url: str
    up: bool = False
    openai_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    anthropic_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = "not checked yet"
    reported: dict[str, int] = field(default_factory=dict)    # model -> running + waiting
    in_flight: dict[str, int] = field(default_factory=dict)   # model -> sent by this edge
    # model -> prompt tokens its prefix cache was asked for ("queries") and found ("hits")
    cache: dict[str, dict[str, float]] = field(default_factory=dict)

    def load(self, model_id: str | None) -> int:
        if model_id is None:
            return max(sum(self.reported.values()), sum(self.in_flight.values()))
        return max(self.reported.get(model_id, 0), self.in_flight.get(model_id, 0))

    def started(self, model_id: str | None) -> None:
        self.in_flight[model_id or ""] = self.in_flight.get(model_id or "", 0) + 1

    def finished(self, model_id: str | None) -> None:
        self.in_flight[model_id or ""] = self.in_flight.get(model_id or "", 1) - 1

    def status(self) -> dict[str, Any]:
        return {"up": self.up, "models": sorted(self.openai_models), "problem": self.problem}


class NodePool:
    def __init__(self, urls: list[str], secret: str, interval: float = 2.0) -> None:
        self.nodes = [Node(url.rstrip("/")) for url in urls]
        self.secret = secret
        self.interval = interval
        self._turn = itertools.count()

    async def refresh(self, client: httpx.AsyncClient) -> None:
        await asyncio.gather(*(self._check(client, node) for node in self.nodes))

    async def watch(self, client: httpx.AsyncClient) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.refresh(client)

    async def _check(self, client: httpx.AsyncClient, node: Node) -> None:
        headers = {SECRET_HEADER: self.secret}
        try:
            health = await client.get(node.url + "/healthz", headers=headers, timeout=5)
            health.raise_for_status()
            openai = await client.get(node.url + BASE + "/models", headers=headers, timeout=5)
            anthropic = await client.get(node.url + BASE + "/v1/models",
                                         params={"limit": 1000}, headers=headers, timeout=5)
            openai.raise_for_status()
            anthropic.raise_for_status()
        except httpx.HTTPError as exc:
            if node.up:
                log.warning("node %s is down: %s", node.url, exc)
            node.up, node.problem = False, str(exc) or type(exc).__name__
            return
        node.openai_models = {m["id"]: m for m in openai.json()["data"]}
        node.anthropic_models = {m["id"]: m for m in anthropic.json()["data"]}
        node.reported = reported_load(health.json())
        if not node.up:
            log.info("node %s is up, serving %s", node.url, ", ".join(node.openai_models))
        node.up, node.problem = True, None
        node.cache = await read_node_cache(client, node.url, headers)

    def mark_down(self, node: Node, reason: str) -> None:
        log.warning("node %s failed a request: %s; left out until it answers again",
                    node.url, reason)
        node.up, node.problem = False, reason

    def next_turn(self) -> int:
        """A number that grows by one per call: requests without a key take turns."""
        return next(self._turn)

    def serving(self, model_id: str | None) -> list[Node]:
        """The nodes that are up and serve ``model_id`` (every node that is up for None);
        503 when those that serve it are all down, 404 when none serves it."""
        up = [n for n in self.nodes if n.up]
        if model_id is not None:
            up = [n for n in up if model_id in n.openai_models]
            if not up and any(model_id in n.openai_models for n in self.nodes):
                raise Overloaded(f"no node serving {model_id} is reachable right now",
                                 code="no_node_available", retry_after=2)
            if not up:
                raise model_not_available(model_id)
        if not up:
            raise Overloaded("no node is reachable right now", code="no_node_available",
                             retry_after=2)
        return up

    def openai_listing(self) -> list[dict[str, Any]]:
        return list(_union(n.openai_models for n in self.nodes if n.up).values())

    def anthropic_listing(self) -> list[dict[str, Any]]:
        return list(_union(n.anthropic_models for n in self.nodes if n.up).values())


def reported_load(health: Any) -> dict[str, int]:
    """Each model's running and waiting requests in a node's ``/healthz`` answer."""
    models = health.get("models") if isinstance(health, dict) else None
    if not isinstance(models, dict):
        return {}
    return {model: _count(state, "active") + _count(state, "waiting")
            for model, state in models.items() if isinstance(state, dict)}


def _count(state: dict[str, Any], name: str) -> int:
    value = state.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _union(listings: Any) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for listing in listings:
        for model_id, entry in listing.items():
            merged.setdefault(model_id, entry)
    return merged
