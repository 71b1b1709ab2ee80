"""The nodes behind an edge: which are up and which models each serves.

Every few seconds the edge asks each node for its health and both model listings; a node
that fails is left out until it answers again, and one that fails a forwarded request
(refused, timed out, reset) is marked down at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..errors import Overloaded, model_not_available
from ..http.formats import BASE
from .fleet import SECRET_HEADER

log = logging.getLogger(__name__)


@dataclass
class Node:
    url: str
    up: bool = False
    openai_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    anthropic_models: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = "not checked yet"

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
        if not node.up:
            log.info("node %s is up, serving %s", node.url, ", ".join(node.openai_models))
        node.up, node.problem = True, None

    def mark_down(self, node: Node, reason: str) -> None:
        log.warning("node %s failed a request: %s; left out until it answers again",
                    node.url, reason)
        node.up, node.problem = False, reason

    def candidates(self, model_id: str | None) -> list[Node]:
        """Nodes to try, in order; each request starts at the next one (round robin)."""
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
        start = next(self._turn) % len(up)
        return up[start:] + up[:start]

    def openai_listing(self) -> list[dict[str, Any]]:
        return list(_union(n.openai_models for n in self.nodes if n.up).values())

    def anthropic_listing(self) -> list[dict[str, Any]]:
        return list(_union(n.anthropic_models for n in self.nodes if n.up).values())


def _union(listings: Any) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for listing in listings:
        for model_id, entry in listing.items():
            merged.setdefault(model_id, entry)
    return merged
