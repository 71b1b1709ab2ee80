"""The engine gauges again under vLLM's names, for routers and schedulers that read those
(llm-d's endpoint picker, Grafana boards made for vLLM): ``[node] standard_api = true``.

Same values as the ``b3os_`` gauges, labelled ``model_name`` as vLLM labels them. The KV
cache of our engines is reused at any token (no blocks), so ``vllm:cache_config_info``
says ``block_size="1"`` and gives the cache's capacity in tokens as ``num_gpu_blocks``.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from ..engine.base import kv_usage
from .metrics import Watched

LABEL = "model_name"


def vllm_gauges(engines: list[tuple[str, Watched]]) -> Iterable[Metric]:
    loads = [(model, engine.load()) for model, engine in engines]
    running = GaugeMetricFamily("vllm:num_requests_running", "Requests running on the "
                                "engine (vLLM's name)", labels=[LABEL])
    waiting = GaugeMetricFamily("vllm:num_requests_waiting", "Requests waiting for the "
                                "engine (vLLM's name)", labels=[LABEL])
    for model, load in loads:
        running.add_metric([model], load.get("active", 0))
        waiting.add_metric([model], load.get("waiting", 0))
    yield running
    yield waiting
    yield from _cache_gauges(engines)


def _cache_gauges(engines: list[tuple[str, Watched]]) -> Iterable[Metric]:
    usage = GaugeMetricFamily("vllm:kv_cache_usage_perc", "Fraction of the KV cache in use, "
                              "0 to 1 (vLLM's name)", labels=[LABEL])
    info = GaugeMetricFamily("vllm:cache_config_info", "The KV cache's layout (vLLM's name)",
                             labels=[LABEL, "block_size", "num_gpu_blocks",
                                     "enable_prefix_caching"])
    for model, engine in engines:
        if (kv := kv_usage(engine)) is None:
            continue
        usage.add_metric([model], kv.fraction)
        info.add_metric([model, "1", str(kv.capacity), "True"], 1.0)
    yield usage
    yield info
