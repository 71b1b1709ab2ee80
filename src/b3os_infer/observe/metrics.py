"""The Prometheus metrics of one app: a registry of its own (tests build many apps in one
process), counters and histograms fed by the observers, gauges read at scrape time.

Names follow Prometheus conventions under ``b3os_``; docs/metrics.md maps them to vLLM's.
Labels are bounded: a model label is a served model's id or ``other``, a route is one of
the routes the server has (``route_label``), a key id appears only with
``[metrics] key_labels = true``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from pydantic import BaseModel, ConfigDict, Field

from ..engine.base import kv_usage
from .context import Generation, Observation

CONTENT_TYPE = CONTENT_TYPE_LATEST

# seconds: a cached one-token reply takes milliseconds, a cold 17k-token prompt on a CPU
# takes minutes
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0,
            160.0, 320.0, 640.0, 1280.0)
_PER_TOKEN = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5,
              0.75, 1.0, 2.5)


NodeCaches = Callable[[], Mapping[str, Mapping[str, Mapping[str, float]]]]


class Watched(Protocol):
    """What the gauges read of an engine (chat or embedding); ``kv_usage`` is optional."""

    def healthy(self) -> bool: ...

    def load(self) -> dict[str, int]: ...


class MetricsConfig(BaseModel):
    """``[metrics]``: who may scrape besides admin keys, and whether keys are labels. A
    table of the config file like those of ``config/sections.py`` (which this layer does
    not import): unknown keys and wrong types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    token: str | None = Field(default=None, description="a bearer token for scrapers besides admin "
                              "keys (or B3OS_INFER_METRICS_TOKEN)")
    key_labels: bool = Field(default=False, description="key ids as a label of the request and "
                             "token counters")


class _Scraped(Collector):
    """Gauges read from live state when Prometheus scrapes: one reader per kind of state
    (engines, queues, nodes), set again rather than added when an app is built twice."""

    def __init__(self) -> None:
        self.readers: dict[str, Callable[[], Iterable[Metric]]] = {}

    def collect(self) -> Iterable[Metric]:
        for read in list(self.readers.values()):
            yield from read()


def _gauge(name: str, doc: str, labels: list[str],
           values: Iterable[tuple[list[str], float]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for label_values, value in values:
        family.add_metric(label_values, value)
    return family


class Metrics:
    def __init__(self, config: MetricsConfig | None = None) -> None:
        self.config = config or MetricsConfig()
        self.registry = CollectorRegistry(auto_describe=True)
        self._models: Callable[[], Collection[str]] = lambda: ()
        self._scraped = _Scraped()
        self.registry.register(self._scraped)
        key = ["key"] if self.config.key_labels else []
        self._counters(key)
        self._histograms()

    def _counter(self, name: str, doc: str, labels: list[str]) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def _counters(self, key: list[str]) -> None:
        model = ["model", *key]
        self.requests = self._counter(
            "b3os_requests", "Requests answered, by model, route, HTTP status and finish "
            "reason", ["model", "route", "status", "finish_reason", *key])
        self.prompt_tokens = self._counter(
            "b3os_prompt_tokens", "Prompt tokens of generations (cached ones included)", model)
        self.cached_tokens = self._counter(
            "b3os_prompt_tokens_cached", "Prompt tokens read from the prefix cache", model)
        self.generation_tokens = self._counter(
            "b3os_generation_tokens", "Tokens generated", model)
        self.drafted_tokens = self._counter(
            "b3os_speculative_drafted_tokens", "Tokens drafted by speculative decoding "
            "(engine/llamacpp/drafting.py) and checked by the model", model)
        self.accepted_tokens = self._counter(
            "b3os_speculative_accepted_tokens", "Drafted tokens the model agreed with: "
            "tokens that cost no decode step of their own", model)
        self.cache_queries = self._counter(
            "b3os_prefix_cache_queries", "Prompt tokens looked up in the prefix cache",
            ["model"])
        self.cache_hits = self._counter(
            "b3os_prefix_cache_hits", "Prompt tokens found in the prefix cache", ["model"])
        self.auth_failures = self._counter(
            "b3os_edge_auth_failures", "Requests refused at authentication (401) or for a "
            "missing permission (403), by b3os error code", ["code"])
        self.routing = self._counter(
            "b3os_edge_routing_decisions", "Requests the edge placed on a node, by model, "
            "decision (affine: the key's own node; fallback: the least loaded node because "
            "the key's own was busy; no_key) and key (session, prefix, none)",
            ["model", "decision", "key"])
        self.limit_refusals = self._counter(
            "b3os_edge_limit_refusals", "Requests refused by the edge's rate limits (429) or "
            "queues (529), by model and b3os error code", ["model", "code"])

    def _histogram(self, name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
        return Histogram(name, doc, ["model"], buckets=buckets, registry=self.registry)

    def _histograms(self) -> None:
        self.ttft = self._histogram(
            "b3os_time_to_first_token_seconds", "From the request's arrival to the first "
            "generated token", _LATENCY)
        self.tpot = self._histogram(
            "b3os_time_per_output_token_seconds", "Decode time per generated token after the "
            "first, per generation", _PER_TOKEN)
        self.e2e = self._histogram(
            "b3os_e2e_request_latency_seconds", "From the request's arrival to the end of its "
            "response, for requests that generated", _LATENCY)
        self.queue = self._histogram(
            "b3os_request_queue_time_seconds", "Waiting for admission (the edge's queue and "
            "limits) and for an engine slot", _LATENCY)
        self.prefill = self._histogram(
            "b3os_request_prefill_time_seconds", "From the engine slot to the first token",
            _LATENCY)
        self.decode = self._histogram(
            "b3os_request_decode_time_seconds", "From the first token to the last", _LATENCY)

    # ---- what the app tells us -----------------------------------------------------------

    def serve_models(self, models: Callable[[], Collection[str]]) -> None:
        """The model ids that may appear as labels (others are counted as ``other``)."""
        self._models = models

    def watch_engines(self, engines: Callable[[], Iterable[tuple[str, Watched]]]) -> None:
        self._scraped.readers["engines"] = lambda: _engine_gauges(list(engines()))

    def watch_gauges(self, name: str, read: Callable[[], Iterable[Metric]]) -> None:
        """More gauges read at scrape time (``name`` replaces an earlier reader)."""
        self._scraped.readers[name] = read

    def watch_queues(self, load: Callable[[], Mapping[str, Mapping[str, int]]]) -> None:
        def read() -> Iterable[Metric]:
            queues = load()
            for what in ("running", "waiting"):
                yield _gauge(f"b3os_edge_queue_{what}", f"Requests {what} in the edge's "
                             "queue of each model", ["model"],
                             (([m], q[what]) for m, q in queues.items()))

        self._scraped.readers["queues"] = read

    def watch_nodes(self, nodes: Callable[[], Mapping[str, bool]]) -> None:
        self._scraped.readers["nodes"] = lambda: [_gauge(
            "b3os_edge_node_up", "1 while the node answers its health checks", ["node"],
            (([url], float(up)) for url, up in nodes().items()))]

    def watch_node_caches(self, caches: NodeCaches) -> None:
        """Each node's prefix-cache counters as it last reported them: node -> model ->
        ``queries`` and ``hits`` (prompt tokens)."""
        self._scraped.readers["node_caches"] = lambda: _node_cache_counters(caches())

    def model_label(self, model: str | None) -> str:
        if model is None:
            return ""
        return model if model in self._models() else "other"

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    # ---- what the observers record ---------------------------------------------------

    def request_done(self, observation: Observation, route: str, status: int,
                     ended: int) -> None:
        """``ended``: when the response's last byte left (``perf_counter_ns``)."""
        model = self.model_label(observation.model)
        key = [observation.key_id or ""] if self.config.key_labels else []
        self.requests.labels(model, route, str(status), observation.finish_reason(),
                             *key).inc()
        if not observation.generations:
            return
        self.e2e.labels(model).observe((ended - observation.began) / 1e9)
        if (queued := observation.queue_ns()) is not None:
            self.queue.labels(model).observe(queued / 1e9)

    def generation_ended(self, observation: Observation, generation: Generation) -> None:
        model = generation.model
        labels = [model, observation.key_id or ""] if self.config.key_labels else [model]
        self.prompt_tokens.labels(*labels).inc(generation.prompt_tokens)
        self.cached_tokens.labels(*labels).inc(generation.cached_tokens)
        self.generation_tokens.labels(*labels).inc(generation.generated_tokens)
        self.drafted_tokens.labels(*labels).inc(generation.drafted_tokens)
        self.accepted_tokens.labels(*labels).inc(generation.accepted_tokens)
        if generation.admitted is not None:
            self.cache_queries.labels(model).inc(generation.prompt_tokens)
            self.cache_hits.labels(model).inc(generation.cached_tokens)
        _phases(self, observation, generation)

    def refused(self, model: str, code: str) -> None:
        self.limit_refusals.labels(self.model_label(model), code).inc()

    def routed(self, model: str | None, decision: str, key: str) -> None:
        self.routing.labels(self.model_label(model), decision, key).inc()

    def auth_failed(self, code: str) -> None:
        self.auth_failures.labels(code).inc()


def _phases(metrics: Metrics, observation: Observation, generation: Generation) -> None:
    model = generation.model
    first, admitted = generation.first_token, generation.admitted
    if first is None:
        return
    metrics.ttft.labels(model).observe((first - observation.began) / 1e9)
    if admitted is not None:
        metrics.prefill.labels(model).observe((first - admitted) / 1e9)
    if generation.ended is not None and generation.last_token is not None:
        metrics.decode.labels(model).observe((generation.ended - first) / 1e9)
        if generation.generated_tokens > 1:
            per_token = (generation.last_token - first) / (generation.generated_tokens - 1)
            metrics.tpot.labels(model).observe(per_token / 1e9)


def _node_cache_counters(caches: Mapping[str, Mapping[str, Mapping[str, float]]]
                         ) -> Iterable[Metric]:
    for what, doc in (("queries", "looked up in"), ("hits", "found in")):
        family = CounterMetricFamily(
            f"b3os_edge_node_prefix_cache_{what}", f"Prompt tokens {doc} each node's prefix "
            "cache, by model, as the node last reported them", labels=["node", "model"])
        for node, models in caches.items():
            for model, counts in models.items():
                if what in counts:
                    family.add_metric([node, model], counts[what])
        yield family


def _engine_gauges(engines: list[tuple[str, Watched]]) -> Iterable[Metric]:
    loads = [(model, engine.load()) for model, engine in engines]
    yield _gauge("b3os_num_requests_running", "Sequences the engine is generating",
                 ["model"], (([m], load.get("active", 0)) for m, load in loads))
    yield _gauge("b3os_num_requests_waiting", "Sequences waiting for an engine slot",
                 ["model"], (([m], load.get("waiting", 0)) for m, load in loads))
    yield _gauge("b3os_model_healthy", "1 while the model's engine is healthy", ["model"],
                 (([m], float(e.healthy())) for m, e in engines))
    # an engine that loads on demand has a ``state``; every other one is always loaded
    yield _gauge("b3os_model_loaded", "1 while the model's weights are loaded", ["model"],
                 (([m], float(getattr(e, "state", "loaded") == "loaded")) for m, e in engines))
    usages = [(model, kv_usage(engine)) for model, engine in engines]
    yield _gauge("b3os_kv_cache_usage_perc", "Fraction of the engine's KV cache in use "
                 "(0 to 1)", ["model"],
                 (([m], u.fraction) for m, u in usages if u is not None))
