"""Which node a request goes to: the session's own node unless it is busy, else the least
loaded one.

A key (``affinity.py``) is placed by rendezvous hashing (highest random weight) over the
healthy nodes that serve the model: every node gets a weight from a hash of its URL and
the key, and the heaviest wins. Edges configured with the same nodes therefore choose
alike without talking to each other, and a node that joins or leaves moves only the keys
whose heaviest node it is (a leaving node's keys go to their second heaviest, the same on
every edge).

The preferred node is passed over when it is busy compared with the least loaded one —
both more than ``absolute`` requests and more than ``relative`` times as many (the
balance test of SGLang's and vLLM's cache-aware routers) — so that a session never piles
up behind a saturated node while others idle. A request without a key goes to the least
loaded node, ties taken in turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .affinity import RoutingKey
from .nodes import Node

Decision = Literal["affine", "fallback", "no_key"]


@dataclass(frozen=True)
class Balance:
    """When the preferred node counts as busy: its load exceeds the least loaded node's by
    more than ``absolute`` requests and is more than ``relative`` times as large."""

    absolute: int = 8
    relative: float = 1.5

    def busy(self, preferred: int, least: int) -> bool:
        return preferred - least > self.absolute and preferred > self.relative * least


@dataclass(frozen=True)
class Placement:
    nodes: list[Node]      # the node to send to first, then the ones to fail over to
    decision: Decision


def weight(node_url: str, key: str) -> int:
    digest = hashlib.blake2b(f"{node_url}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def ranked(key: str, nodes: Sequence[Node]) -> list[Node]:
    """The nodes from the key's heaviest to its lightest (rendezvous order)."""
    return sorted(nodes, key=lambda node: weight(node.url, key), reverse=True)


def place(key: RoutingKey | None, nodes: Sequence[Node], load: Callable[[Node], int],
          balance: Balance, turn: int) -> Placement:
    """Where to send a request among ``nodes`` (healthy, serving its model, not empty)."""
    if key is None:
        rotated = [*nodes[turn % len(nodes):], *nodes[:turn % len(nodes)]]
        return Placement(sorted(rotated, key=load), "no_key")
    order = ranked(key.value, nodes)
    loads = {node.url: load(node) for node in order}
    least = min(order, key=lambda node: loads[node.url])   # ties: the heavier weight
    if balance.busy(loads[order[0].url], loads[least.url]):
        return Placement([least, *(node for node in order if node is not least)], "fallback")
    return Placement(order, "affine")
