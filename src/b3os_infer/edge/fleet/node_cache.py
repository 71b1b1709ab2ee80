"""Each node's prefix cache as the node reports it: the prompt tokens its engines looked up
and found, per model, read from the node's own ``/metrics`` (with the node secret) at each
health check, so that an edge's ``/metrics`` shows whether routing keeps the caches warm.
"""

from __future__ import annotations

import logging

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ..scrape import METRICS_PATH

log = logging.getLogger(__name__)

# the node's counter families, and what the edge calls each
FAMILIES = {"b3os_prefix_cache_queries": "queries", "b3os_prefix_cache_hits": "hits"}


async def read_node_cache(client: httpx.AsyncClient, url: str,
                          headers: dict[str, str]) -> dict[str, dict[str, float]]:
    """model -> {"queries": tokens, "hits": tokens}; empty when the node does not say."""
    try:
        response = await client.get(url + METRICS_PATH, headers=headers, timeout=5)
        response.raise_for_status()
        return cache_counts(response.text)
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("node %s: no prefix-cache counts: %s", url, exc)
        return {}


def cache_counts(exposition: str) -> dict[str, dict[str, float]]:
    counts: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(exposition):
        what = FAMILIES.get(family.name)
        if what is None:
            continue
        for sample in family.samples:
            if sample.name == family.name + "_total" and "model" in sample.labels:
                counts.setdefault(sample.labels["model"], {})[what] = sample.value
    return counts
