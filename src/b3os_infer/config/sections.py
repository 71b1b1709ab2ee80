"""The tables of ``b3os.toml`` other than the models': each a ``Section``, its keys typed,
bounded and described (the descriptions are docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import ip_network
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from ..engine.kv_cache import DEFAULT_KV_TYPE, KV_TYPES
from ..engine.memory_plan import DEFAULT_KV_SHARE, KvBudget, parse_share
from .section import Section, one_of

FLASH_ATTENTION = ("auto", "on", "off")

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
BATCH_DAY_SECONDS = 24 * 3600
SEARCH_BACKENDS = ("searxng",)


class ServerConfig(Section):
    """``[server]``: where ``b3os-infer serve`` listens, and how it stops."""

    host: str = Field(default="127.0.0.1", description="the address to listen on "
                      "(`make serve HOST=...` and `serve --host` override it)")
    port: int = Field(default=8000, ge=0, le=65535, description="the port to listen on")
    shutdown_grace_seconds: int = Field(default=30, ge=0, description="on SIGTERM, running "
                                        "requests may finish for this long, then they end")
    head_timeout_seconds: int = Field(default=30, ge=1, description="a connection whose request "
                                      "line and headers take longer is closed")


class EngineConfig(Section):
    """``[engine]``: the embedded llama.cpp engine (docs/engine.md)."""

    threads: int = Field(default=2, ge=1, description="CPU threads llama.cpp decodes with")
    # 8 sequences decode together: measured 1.9-3.7x llama-cpp-python's server at 8
    # concurrent streams (docs/benchmarks.md); 4 left the 8-stream target unmet
    parallel: int = Field(default=8, ge=1, description="sequences decoded together")
    batch_tokens: int = Field(default=512, ge=32, description="tokens in one llama.cpp batch")
    kv_type: Annotated[str, one_of(KV_TYPES)] = Field(
        default=DEFAULT_KV_TYPE, description="the KV cache's number type: "
        + " or ".join(KV_TYPES))
    flash_attention: Annotated[str, one_of(FLASH_ATTENTION)] = Field(
        default="auto", description="llama.cpp's flash attention: on, off, or auto (off on "
        "the CPU's lanes of up to 8,192 tokens with an f16 KV, on elsewhere)")
    kv_memory: str | None = Field(default=None, description="the KV memory of a chat model, all "
                                  "its lanes together, as a share of the memory beyond the "
                                  f"weights (unset: {DEFAULT_KV_SHARE:.0%})")
    kv_memory_mib: int | None = Field(default=None, ge=16, description="the same in MiB, in place "
                                      "of kv_memory")
    long_slots: int = Field(default=2, ge=0, description="lanes that hold the whole context "
                            "window; the other parallel lanes share the rest")
    gpu_layers: int | None = Field(default=None, ge=0, description="layers on the GPU (unset: "
                                   "every layer where llama.cpp has a GPU backend, else 0)")
    main_gpu: int | None = Field(default=None, ge=0, description="the GPU that holds the whole "
                                 "model")
    tensor_split: list[float] = Field(default_factory=list, description="the layers "
                                      "spread over the GPUs in these proportions, e.g. "
                                      "[3, 1]")
    prefix_cache_mib: int = Field(default=4096, ge=0, description="long prefixes saved under "
                                  "<home>/prefix-cache and reloaded after a restart "
                                  "(0: off)")
    prefix_cache_min_tokens: int = Field(default=2048, ge=1, description="the shortest prefix "
                                         "saved there")
    speculative: bool = Field(default=True, description="draft-free speculative decoding: drafts "
                              "from the prompt's and the reply's own n-grams")
    draft_pool_tokens: int = Field(default=0, ge=0, description="recent replies kept to draft "
                                   "from as well, in tokens (0: none)")

    @field_validator("kv_memory", mode="before")
    @classmethod
    def _a_share(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, str):
            raise ValueError('should be a share of memory such as "25%"')
        parse_share(value)   # its ValueError says what is wrong with the share
        return value

    @field_validator("tensor_split", mode="before")
    @classmethod
    def _proportions(cls, value: Any) -> Any:
        numbers = isinstance(value, list) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value)
        if not numbers or (value and not sum(value) > 0):
            raise ValueError("should be a list of numbers >= 0, one per GPU, not all 0 "
                             "(such as [3, 1])")
        return value

    @model_validator(mode="after")
    def _one_of_each_pair(self) -> EngineConfig:
        if self.kv_memory is not None and self.kv_memory_mib is not None:
            raise ValueError("use either kv_memory or kv_memory_mib, not both")
        if self.flash_attention == "off" and self.kv_type != "f16":
            raise ValueError(f"kv_type = \"{self.kv_type}\" needs flash attention: use "
                             "flash_attention = \"auto\" or \"on\", or kv_type = \"f16\"")
        if self.tensor_split and self.main_gpu is not None:
            raise ValueError("use either main_gpu (the whole model on one GPU) or "
                             "tensor_split (the layers spread over GPUs), not both")
        return self


def kv_budget(engine: EngineConfig) -> KvBudget:
    """The ``[engine]`` KV budget: kv_memory_mib, else the kv_memory share (default 25%)."""
    if engine.kv_memory_mib is not None:
        return KvBudget(mib=engine.kv_memory_mib)
    share = parse_share(engine.kv_memory) if engine.kv_memory else DEFAULT_KV_SHARE
    return KvBudget(share=share)


class LoadingConfig(Section):
    """``[loading]``: the node's bounds on models loaded at once, and whether the models
    installed in the home (``models add``) are served beside the configured ones."""

    max_models: int = Field(default=0, ge=0, description="chat models loaded at once (0: no bound)")
    max_memory_mib: int = Field(default=0, ge=0, description="their memory together (0: no bound)")
    installed: bool = Field(default=True, description="serve the installed packs too, listed "
                            "unloaded and loaded on their first request")


class EdgeConfig(Section):
    """``[edge]``: the edge in front of the models (docs/edge.md)."""

    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1, description="a larger "
                                "request body is answered 413")
    database_url: str | None = Field(default=None, description="the key and usage database "
                                     "(unset: SQLite under the home)")
    redis_url: str | None = Field(default=None, description="rate limits shared by the edges "
                                  "(unset: kept in this process)")
    body_timeout_seconds: int = Field(default=30, ge=1, description="a body that stops arriving "
                                      "for this long is answered 408")
    # a session's node is passed over for the least loaded one when its load exceeds that
    # one's by more than this many requests and by more than this factor (edge/fleet/node_choice.py)
    balance_abs_threshold: int = Field(default=8, ge=0, description="a session's node is passed "
                                       "over when it has this many more requests than the "
                                       "least loaded node")
    balance_rel_threshold: float = Field(default=1.5, ge=1.0, description="... and this many times "
                                         "as many")


class NodeConfig(Section):
    """``[node]``: what a fleet node offers besides its edges' routes."""

    standard_api: bool = Field(default=False, description="the standard paths (/v1/chat/"
                               "completions, ...), /health, /tokenize and vLLM's metric "
                               "names, for a standard router in front")


class BatchSettings(Section):
    """``[batches]``: how batch work is scheduled and bounded (docs/batches.md)."""

    concurrency: int = Field(default=4, ge=1, description="batch sequences in flight on this node, "
                             "all batches and models together")
    reserve_slots: int = Field(default=1, ge=0, description="engine slots a batch request never "
                               "takes, kept for interactive requests")
    max_file_bytes: int = Field(default=32 * 1024 * 1024, ge=1, description="an uploaded batch "
                                "file (the edge's max_body_bytes applies too)")
    max_requests: int = Field(default=100_000, ge=1, description="requests in one batch")
    expires_after_seconds: int = Field(default=BATCH_DAY_SECONDS, ge=1, description="a batch ends "
                                       "this long after it was created at the latest")
    check_seconds: float = Field(default=0.02, gt=0.0, description="how often the runner looks for "
                                 "interactive requests waiting while batches run")


class WebSearchConfig(Section):
    """``[web_search]``: the backend that runs the web_search server tool
    (docs/server-tools.md); with none every search answers ``unavailable``."""

    backend: Annotated[str, one_of(SEARCH_BACKENDS, empty=True)] = Field(
        default="", description="the search backend: searxng (empty: none)")
    url: str = Field(default="", description="the backend's base URL")
    timeout_seconds: int = Field(default=10, ge=1, description="one search's bound")
    max_results: int = Field(default=10, ge=1, description="results given to the model")
    language: str = Field(default="", description="passed to SearXNG as `language` when set")

    @model_validator(mode="after")
    def _backend_url(self) -> WebSearchConfig:
        if self.backend and not self.url.startswith(("http://", "https://")):
            raise ValueError("url should be the backend's http(s) address")
        return self


class WebFetchConfig(Section):
    """``[web_fetch]``: the web_fetch server tool; off unless enabled. Public addresses
    only, but for the networks the operator lists in ``allow_networks``."""

    enabled: bool = Field(default=False, description="serve the web_fetch tool")
    max_bytes: int = Field(default=2 * 1024 * 1024, ge=1, description="a page's bound")
    timeout_seconds: int = Field(default=15, ge=1, description="one fetch's bound")
    max_redirects: int = Field(default=5, ge=0, description="redirects followed")
    allow_networks: list[str] = Field(default_factory=list, description="private "
                                      "networks that may be fetched too, as CIDRs")

    @field_validator("allow_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for network in value:
            try:
                ip_network(network, strict=False)
            except ValueError:
                raise ValueError(f"{network!r} is not a network such as "
                                 '"10.0.0.0/8"') from None
        return value


class ServerToolsConfig(Section):
    """``[server_tools]``: model steps one request may take before its turn is paused."""

    max_steps: int = Field(default=10, ge=1, description="model steps of one request's server "
                           "tool loop")


# ---- [limits.*] and [concurrency.*]: a default table and one per model id ---------------

@dataclass(frozen=True)
class ModelLimits:
    """One model's rate limits, per key and minute (edge/admission/limits.py enforces them)."""

    requests_per_minute: int = 600
    input_tokens_per_minute: int = 400_000
    output_tokens_per_minute: int = 80_000

    @property
    def capacities(self) -> tuple[int, int, int]:
        return (self.requests_per_minute, self.input_tokens_per_minute,
                self.output_tokens_per_minute)


@dataclass(frozen=True)
class QueueLimits:
    """One model's concurrency on an edge (edge/admission/queue.py enforces it)."""

    running: int = 16
    waiting: int = 64


class RateLimitTable(Section):
    """``[limits.default]`` or ``[limits."model id"]``; a model's table overrides single
    keys of the default one."""

    requests_per_minute: int | None = Field(default=None, ge=1, description="requests per key and "
                                            f"minute (default {ModelLimits.requests_per_minute})")
    input_tokens_per_minute: int | None = Field(default=None, ge=1, description="uncached input "
                                                "tokens per key and minute (default "
                                                f"{ModelLimits.input_tokens_per_minute})")
    output_tokens_per_minute: int | None = Field(default=None, ge=1, description="output tokens "
                                                 "per key and minute (default "
                                                 f"{ModelLimits.output_tokens_per_minute})")


class ConcurrencyTable(Section):
    """``[concurrency.default]`` or ``[concurrency."model id"]``, merged like limits."""

    running: int | None = Field(default=None, ge=1, description="requests of a model running at "
                                f"once on an edge (default {QueueLimits.running})")
    waiting: int | None = Field(default=None, ge=0, description="requests waiting for them; "
                                f"beyond, 529 (default {QueueLimits.waiting})")


def per_model(tables: dict[str, RateLimitTable] | dict[str, ConcurrencyTable]
              ) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The ``default`` table's keys, and each model's, as given (unset keys left out)."""
    given = {name: table.model_dump(exclude_none=True) for name, table in tables.items()}
    return given.pop("default", {}), given
