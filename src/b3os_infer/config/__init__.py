"""Settings: the TOML file that ``serve --config FILE`` reads, as typed tables with their
defaults (docs/configuration.md), and the home directory.

- ``section``: the base of every table (unknown keys and wrong types refused);
- ``sections``: the tables but the models'; ``models``: ``[model]`` and ``[[models]]``, one
  model per engine;
- ``load``: the whole file and its errors in the file's terms;
- ``reference``: docs/configuration.md, rendered from the tables;
- ``home``: where a node keeps its data.
"""

from .home import Home
from .load import Config, ConfigError, load_config
from .models import (
    ENGINES,
    KINDS,
    BertModel,
    ChatModelConfig,
    LlamacppModel,
    ModelBasics,
    ModelConfig,
    ScriptedModel,
    UpstreamModel,
    default_embedding,
)
from .sections import (
    BATCH_DAY_SECONDS,
    DEFAULT_MAX_BODY_BYTES,
    BatchSettings,
    ConcurrencyTable,
    EdgeConfig,
    EngineConfig,
    LoadingConfig,
    ModelLimits,
    NodeConfig,
    QueueLimits,
    RateLimitTable,
    ServerConfig,
    ServerToolsConfig,
    WebFetchConfig,
    WebSearchConfig,
    kv_budget,
    per_model,
)

__all__ = [
    "BATCH_DAY_SECONDS", "DEFAULT_MAX_BODY_BYTES", "ENGINES", "KINDS",
    "BatchSettings", "BertModel", "ChatModelConfig", "ConcurrencyTable", "Config",
    "ConfigError", "EdgeConfig", "EngineConfig", "Home", "LlamacppModel", "LoadingConfig",
    "ModelBasics", "ModelConfig", "ModelLimits", "NodeConfig", "QueueLimits",
    "RateLimitTable", "ScriptedModel", "ServerConfig", "ServerToolsConfig", "UpstreamModel",
    "WebFetchConfig", "WebSearchConfig", "default_embedding", "kv_budget", "load_config",
    "per_model",
]
