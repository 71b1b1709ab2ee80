"""Settings: defaults, the TOML file that ``serve --config FILE`` reads, and the home dir."""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from .edge.limits import LimitsConfig
from .edge.queue import QueueConfig
from .edge.state import DEFAULT_MAX_BODY_BYTES
from .engine.kv_cache import DEFAULT_KV_TYPE, KV_TYPES
from .engine.memory_plan import DEFAULT_KV_SHARE, KvBudget, parse_share
from .node.models import DEFAULT_EMBEDDING_ID, DEFAULT_MODEL_ID
from .observe.metrics import MetricsConfig
from .packs import CATALOGUE, model_id


class ConfigError(ValueError):
    """A config file we cannot use; the message says which key and why."""


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    # SIGTERM: running requests may finish for this long, then they are ended
    shutdown_grace_seconds: int = 30
    # a connection whose request line and headers take longer is closed (slow clients)
    head_timeout_seconds: int = 30


@dataclass
class EngineConfig:
    threads: int = 2
    # 8 sequences decode together: measured 1.9-3.7x llama-cpp-python's server at 8
    # concurrent streams (docs/benchmarks.md); 4 left the 8-stream target unmet
    parallel: int = 8
    batch_tokens: int = 512
    kv_type: str = DEFAULT_KV_TYPE
    # KV memory of a chat model, all its lanes together (docs/engine.md, docs/models.md):
    # a share of the memory available beyond the weights ("25%", the default), or
    # kv_memory_mib; long_slots hold the whole context window, the parallel others share
    # the rest
    kv_memory: str | None = None
    kv_memory_mib: int | None = None
    long_slots: int = 2
    # accelerators (engine/devices.py): layers on the GPU (default: every layer where the
    # llama.cpp build has a GPU backend, else 0); main_gpu alone puts the whole model on
    # that GPU; tensor_split spreads the layers over the GPUs in these proportions
    gpu_layers: int | None = None
    main_gpu: int | None = None
    tensor_split: list[float] = field(default_factory=list)
    # long prefixes saved under <home>/prefix-cache and reloaded after a restart; 0: off
    prefix_cache_mib: int = 4096
    prefix_cache_min_tokens: int = 2048
    # draft-free speculative decoding (docs/engine.md): drafts from the prompt and the
    # reply's own n-grams and from recent replies (a pool of this many tokens; 0: none)
    speculative: bool = True
    draft_pool_tokens: int = 0


@dataclass
class LoadingConfig:
    """``[loading]``: the node's bounds on models loaded at once (0: no bound), and whether
    the models installed in the home (``models add``) are served beside the configured ones
    (listed unloaded, loaded on their first request)."""

    max_models: int = 0
    max_memory_mib: int = 0
    installed: bool = True

    def problems(self) -> list[str]:
        found = []
        for name in ("max_models", "max_memory_mib"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                found.append(f"{name} should be an integer >= 0 (0: no bound)")
        return found


ENGINES = ("llamacpp", "upstream", "scripted", "bert")
KINDS = {"chat": ("llamacpp", "upstream", "scripted"), "embedding": ("bert",)}
FLAVOURS = ("vllm", "sglang", "llama-server", "llama-cpp-python")


@dataclass
class ModelConfig:
    """One served model: its id, what serves it, and where its tokenizer comes from."""

    id: str = DEFAULT_MODEL_ID
    display_name: str | None = None    # default: the GGUF's own name, else the file name
    kind: str = "chat"
    engine: str = "llamacpp"           # "upstream": an engine over HTTP; "scripted": a fake
    path: str | None = None            # llamacpp: the GGUF (default: the embedded model)
    pack: str | None = None            # llamacpp: an installed model pack (b3os-infer models)
    context_window: int | None = None
    max_output_tokens: int | None = None   # default: 8192 or half the window, the lesser
    url: str | None = None             # upstream: its base URL, e.g. http://gpu1:8000
    flavour: str | None = None         # upstream: vllm, sglang, llama-server, ...
    served_name: str | None = None     # upstream: the model name it expects (default: id)
    tokenizer: str | None = None       # upstream: a GGUF file or a Hugging Face tokenizer dir
    api_key: str | None = None         # upstream: sent as Authorization: Bearer
    script: str | None = None          # scripted: a JSON or TOML script (engine/script.py)
    # embedding models (kind "embedding", engine "bert": a sentence-transformers directory
    # as path, default the embedded all-MiniLM-L6-v2): text put before each input of
    # input_type "query" or "document"
    query_prefix: str | None = None
    document_prefix: str | None = None
    # llamacpp models load on their first request (docs/models.md, "Loading on demand"):
    # preload loads it at start as well; keep_alive idle seconds before it is unloaded
    # (-1: never; 0: as soon as it is idle)
    preload: bool = True
    keep_alive: int = 300


def default_embedding() -> ModelConfig:
    """The embedding model served beside the chat model unless ``[[models]]`` says otherwise."""
    return ModelConfig(id=DEFAULT_EMBEDDING_ID, kind="embedding", engine="bert")


@dataclass
class EdgeConfig:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    database_url: str | None = None   # default: SQLite under $B3OS_INFER_HOME
    redis_url: str | None = None      # default: limits kept in this process
    body_timeout_seconds: int = 30    # a body that stops arriving for this long: 408
    # a session's node is passed over for the least loaded one when its load exceeds that
    # one's by more than this many requests and by more than this factor (edge/placement.py)
    balance_abs_threshold: int = 8
    balance_rel_threshold: float = 1.5


@dataclass
class NodeConfig:
    """``[node]``: what a fleet node offers besides its edges' routes."""

    # the standard paths (/v1/chat/completions, ...), /health, /tokenize and vLLM's metric
    # names, for a standard router in front (vllm-router, SGLang's gateway, llm-d)
    standard_api: bool = False


BATCH_DAY_SECONDS = 24 * 3600


@dataclass
class BatchSettings:
    """``[batches]``: how batch work is scheduled and bounded (docs/batches.md)."""

    # batch sequences in flight at most on this node (all batches, all models together)
    concurrency: int = 4
    # engine slots a batch request never takes, kept free for interactive requests
    reserve_slots: int = 1
    # an uploaded file (OpenAI Files, purpose batch); the edge's max_body_bytes also applies
    max_file_bytes: int = 32 * 1024 * 1024
    max_requests: int = 100_000
    # a batch ends at the latest this long after it was created; requests not run by then
    # are reported as expired
    expires_after_seconds: int = BATCH_DAY_SECONDS
    # how often the runner looks for interactive requests waiting while batches run
    check_seconds: float = 0.02

    def problems(self) -> list[str]:
        """What is wrong with these values, for the config loader."""
        minimums = {"concurrency": 1, "reserve_slots": 0, "max_file_bytes": 1,
                    "max_requests": 1, "expires_after_seconds": 1}
        found = [f"{name} should be at least {low}" for name, low in minimums.items()
                 if getattr(self, name) < low]
        if self.check_seconds <= 0:
            found.append("check_seconds should be above 0")
        return found


@dataclass
class WebSearchConfig:
    """``[web_search]``: the backend that runs the web_search server tool (docs/server-tools.md).
    No backend: every search answers ``unavailable``, inside the reply."""

    backend: str = ""          # "searxng"
    url: str = ""              # the backend's base URL (SearXNG: GET {url}/search?format=json)
    timeout_seconds: int = 10
    max_results: int = 10
    language: str = ""         # passed to SearXNG as `language` when set


@dataclass
class WebFetchConfig:
    """``[web_fetch]``: the web_fetch server tool; off unless enabled. Public addresses only,
    but for the networks the operator lists in ``allow_networks`` (CIDRs)."""

    enabled: bool = False
    max_bytes: int = 2 * 1024 * 1024
    timeout_seconds: int = 15
    max_redirects: int = 5
    allow_networks: list[str] = field(default_factory=list)


@dataclass
class ServerToolsConfig:
    """``[server_tools]``: model steps one request may take before its turn is paused."""

    max_steps: int = 10


SEARCH_BACKENDS = ("searxng",)


def server_tool_problems(search: WebSearchConfig, fetch: WebFetchConfig,
                         tools: ServerToolsConfig) -> list[str]:
    found: list[str] = []
    if search.backend and search.backend not in SEARCH_BACKENDS:
        found.append(f"[web_search] backend should be one of {', '.join(SEARCH_BACKENDS)}")
    if search.backend and not search.url.startswith(("http://", "https://")):
        found.append("[web_search] url should be the backend's http(s) address")
    if min(search.timeout_seconds, search.max_results, fetch.max_bytes,
           fetch.timeout_seconds, tools.max_steps) < 1 or fetch.max_redirects < 0:
        found.append("[web_search], [web_fetch] and [server_tools] numbers should be at "
                     "least 1 (max_redirects at least 0)")
    return found


@dataclass
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    models: list[ModelConfig] = field(default_factory=list)   # [[models]]; else [model]
    edge: EdgeConfig = field(default_factory=EdgeConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    concurrency: QueueConfig = field(default_factory=QueueConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    node: NodeConfig = field(default_factory=NodeConfig)
    batches: BatchSettings = field(default_factory=BatchSettings)
    loading: LoadingConfig = field(default_factory=LoadingConfig)
    web_search: WebSearchConfig = field(default_factory=WebSearchConfig)
    web_fetch: WebFetchConfig = field(default_factory=WebFetchConfig)
    server_tools: ServerToolsConfig = field(default_factory=ServerToolsConfig)

    def served(self) -> list[ModelConfig]:
        """The models this node serves: the ``[[models]]`` list, or the single ``[model]``
        and the default embedding model."""
        return self.models or [self.model, default_embedding()]

    def left_out(self) -> list[str]:
        """What users may expect that this config does not serve, said at start: a
        ``[[models]]`` list replaces the default embedding model too."""
        if not self.models or any(m.kind == "embedding" for m in self.models):
            return []
        return [f"no embedding model: [[models]] lists none, so {DEFAULT_EMBEDDING_ID} is not "
                "served and /v1/infer/embeddings has no model; to serve it add [[models]] "
                f'id = "{DEFAULT_EMBEDDING_ID}", kind = "embedding", engine = "bert"']


_SECTIONS = {"server": ServerConfig, "engine": EngineConfig, "model": ModelConfig,
             "edge": EdgeConfig, "metrics": MetricsConfig, "batches": BatchSettings,
             "loading": LoadingConfig, "node": NodeConfig,
             "web_search": WebSearchConfig, "web_fetch": WebFetchConfig,
             "server_tools": ServerToolsConfig}
# Per-model tables: [limits.default], [limits."model id"]; each key with its minimum.
_PER_MODEL = {
    "limits": {"requests_per_minute": 1, "input_tokens_per_minute": 1,
               "output_tokens_per_minute": 1},
    "concurrency": {"running": 1, "waiting": 0},
}


def load_config(path: Path | None) -> Config:
    config = Config()
    if path is None:
        return config
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    for name, table in data.items():
        _section(config, name, table, data, str(path))
    for model in config.served():
        if model.script:  # relative to the config file
            model.script = str(path.parent / model.script)
    if config.edge.max_body_bytes < 1:
        raise ConfigError(f"{path} [edge]: max_body_bytes should be at least 1")
    _check_engine(config.engine, f"{path} [engine]")
    if problems := config.batches.problems():
        raise ConfigError(f"{path} [batches]: {problems[0]}")
    if problems := config.loading.problems():
        raise ConfigError(f"{path} [loading]: {problems[0]}")
    if problems := server_tool_problems(config.web_search, config.web_fetch,
                                        config.server_tools):
        raise ConfigError(f"{path}: {problems[0]}")
    return config


# the smallest value of each [engine] number; the optional ones may also be left out
_ENGINE_MINIMUMS = {"threads": 1, "parallel": 1, "batch_tokens": 32, "long_slots": 0,
                    "prefix_cache_mib": 0, "prefix_cache_min_tokens": 1,
                    "draft_pool_tokens": 0}
_OPTIONAL_MINIMUMS = {"kv_memory_mib": 16, "gpu_layers": 0, "main_gpu": 0}


def _check_engine(engine: EngineConfig, where: str) -> None:
    if engine.kv_type not in KV_TYPES:
        raise ConfigError(f"{where}: kv_type should be one of {', '.join(KV_TYPES)}")
    if not isinstance(engine.speculative, bool):
        raise ConfigError(f"{where}: speculative should be true or false")
    for key, minimum in _ENGINE_MINIMUMS.items():
        if getattr(engine, key) < minimum:
            raise ConfigError(f"{where}: {key} should be at least {minimum}")
    for key, minimum in _OPTIONAL_MINIMUMS.items():
        value = getattr(engine, key)
        if value is not None and (not _is_int(value) or value < minimum):
            raise ConfigError(f"{where}: {key} should be an integer >= {minimum}")
    _check_kv_memory(engine, where)
    _check_split(engine, where)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_kv_memory(engine: EngineConfig, where: str) -> None:
    if engine.kv_memory is None:
        return
    if engine.kv_memory_mib is not None:
        raise ConfigError(f"{where}: use either kv_memory or kv_memory_mib, not both")
    if not isinstance(engine.kv_memory, str):
        raise ConfigError(f"{where}: kv_memory should be a share of memory such as \"25%\"")
    try:
        parse_share(engine.kv_memory)
    except ValueError as exc:
        raise ConfigError(f"{where}: kv_memory {exc}") from None


def _check_split(engine: EngineConfig, where: str) -> None:
    split = engine.tensor_split
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                  for v in split)
    if not numbers or (split and not sum(split) > 0):
        raise ConfigError(f"{where}: tensor_split should be a list of numbers >= 0, one per "
                          "GPU, not all 0 (such as [3, 1])")
    if split and engine.main_gpu is not None:
        raise ConfigError(f"{where}: use either main_gpu (the whole model on one GPU) or "
                          "tensor_split (the layers spread over GPUs), not both")


def kv_budget(engine: EngineConfig) -> KvBudget:
    """The ``[engine]`` KV budget: kv_memory_mib, else the kv_memory share (default 25%)."""
    if engine.kv_memory_mib is not None:
        return KvBudget(mib=engine.kv_memory_mib)
    share = parse_share(engine.kv_memory) if engine.kv_memory else DEFAULT_KV_SHARE
    return KvBudget(share=share)


def _section(config: Config, name: str, table: Any, data: dict[str, Any], where: str) -> None:
    """One top-level table of the file, applied to ``config``."""
    if name in _PER_MODEL and isinstance(table, dict):
        default, models = _per_model(name, table, where)
        kind = LimitsConfig if name == "limits" else QueueConfig
        setattr(config, name, kind(default, models))
    elif name == "models":
        config.models = _models(table, where, "model" in data)
    elif name not in _SECTIONS or not isinstance(table, dict):
        raise ConfigError(f"{where}: unknown section [{name}]")
    else:
        _apply(getattr(config, name), table, f"{where} [{name}]")
        if name == "model":
            _check_model(config.model, f"{where} [model]")
            if config.model.pack and "id" not in table:
                config.model.id = model_id(config.model.pack)


def _models(tables: Any, where: str, single: bool) -> list[ModelConfig]:
    if single:
        raise ConfigError(f"{where}: use either [model] or [[models]], not both")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{where}: [[models]] should be one or more tables")
    models = []
    for index, table in enumerate(tables):
        label = f"{where} [[models]] #{index + 1}"
        if not isinstance(table, dict) or "id" not in table:
            raise ConfigError(f"{label}: every model needs an id")
        model = ModelConfig()
        _apply(model, table, label)
        _check_model(model, label)
        models.append(model)
    ids = [m.id for m in models]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{where}: [[models]] ids must differ")
    return models


def _check_model(model: ModelConfig, where: str) -> None:
    if not _is_int(model.keep_alive) or model.keep_alive < -1:
        raise ConfigError(f"{where}: keep_alive should be seconds >= 0, or -1 (never unload)")
    engines = KINDS.get(model.kind)
    if engines is None:
        raise ConfigError(f"{where}: kind {model.kind!r} is not served; kinds: "
                          f"{', '.join(KINDS)}")
    if model.engine not in engines:
        raise ConfigError(f"{where}: a {model.kind} model's engine should be one of "
                          f"{', '.join(engines)}")
    if model.engine == "bert":
        return
    if model.engine == "llamacpp":
        _check_pack(model, where)
        return
    if model.engine == "scripted":
        if not model.script:
            raise ConfigError(f"{where}: a scripted model needs script: a JSON or TOML file")
        return
    if not model.url or model.flavour not in FLAVOURS:
        raise ConfigError(f"{where}: an upstream model needs url and flavour "
                          f"({', '.join(FLAVOURS)})")
    if not model.tokenizer:
        raise ConfigError(f"{where}: an upstream model needs tokenizer: a GGUF file or a "
                          "Hugging Face tokenizer directory, for its chat template and tokens")


def _check_pack(model: ModelConfig, where: str) -> None:
    if model.pack is None:
        return
    if model.pack not in CATALOGUE:
        raise ConfigError(f"{where}: unknown pack {model.pack!r}; known packs: "
                          f"{', '.join(CATALOGUE)}")
    if model.path:
        raise ConfigError(f"{where}: use either path or pack, not both")


def _per_model(name: str, tables: dict[str, Any], where: str
               ) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    default: dict[str, int] = {}
    models: dict[str, dict[str, int]] = {}
    for model, table in tables.items():
        label = f"{where} [{name}.{model if model == 'default' else repr(model)}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{label}: should be a table such as [{name}.default]")
        for key, value in table.items():
            minimum = _PER_MODEL[name].get(key)
            if minimum is None:
                known = ", ".join(_PER_MODEL[name])
                raise ConfigError(f"{label}: unknown key {key!r}; known keys: {known}")
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(f"{label}: {key} should be an integer >= {minimum}")
        (default if model == "default" else models.setdefault(model, {})).update(table)
    return default, models


def _apply(section: Any, table: dict[str, Any], where: str) -> None:
    known = {f.name: f for f in fields(section)}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}")
        expected = type(getattr(section, key))
        # a whole number is a float's value too (check_seconds = 1); a bool is no number
        whole = expected is float and isinstance(value, int) and not isinstance(value, bool)
        if getattr(section, key) is not None and not whole and not isinstance(value, expected):
            raise ConfigError(f"{where}: {key} should be {expected.__name__}")
        setattr(section, key, value)


@dataclass(frozen=True)
class Home:
    """Where a node keeps its data: the key database, the node secret and model packs."""

    root: Path

    @classmethod
    def resolve(cls) -> Home:
        root = os.environ.get("B3OS_INFER_HOME") or platformdirs.user_data_dir("b3os-infer")
        home = cls(Path(root))
        home.root.mkdir(parents=True, exist_ok=True)
        return home

    @property
    def database(self) -> Path:
        return self.root / "b3os.sqlite3"

    @property
    def models(self) -> Path:
        """Where ``b3os-infer models add`` puts the GGUFs it assembles."""
        return self.root / "models"

    @property
    def prefix_cache(self) -> Path:
        """Where the embedded engine saves long prompt prefixes' KV across restarts."""
        return self.root / "prefix-cache"

    def node_secret(self) -> bytes:
        path = self.root / "node_secret"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
        return bytes.fromhex(path.read_text().strip())
