"""The whole config file as one typed ``Config``, and what is wrong with a file said in the
file's own terms: the file, the table (``[engine]``, ``[[models]] #2``,
``[limits."model id"]``) and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from ..node.cards import DEFAULT_EMBEDDING_ID
from ..observe.metrics import MetricsConfig
from .models import (
    LlamacppModel,
    ModelConfig,
    ScriptedModel,
    default_embedding,
)
from .problems import said
from .section import Section
from .sections import (
    BatchSettings,
    ConcurrencyTable,
    EdgeConfig,
    EngineConfig,
    LoadingConfig,
    NodeConfig,
    RateLimitTable,
    ServerConfig,
    ServerToolsConfig,
    WebFetchConfig,
    WebSearchConfig,
)


class ConfigError(ValueError):
    """A config file we cannot use; the message says where and why, one line a problem."""


class Config(Section):
    """Every table of ``b3os.toml``; a table left out has its defaults."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    model: ModelConfig = Field(default_factory=LlamacppModel)
    models: list[ModelConfig] = Field(default_factory=list)   # [[models]]; else [model]
    edge: EdgeConfig = Field(default_factory=EdgeConfig)
    limits: dict[str, RateLimitTable] = Field(default_factory=dict)
    concurrency: dict[str, ConcurrencyTable] = Field(default_factory=dict)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    node: NodeConfig = Field(default_factory=NodeConfig)
    batches: BatchSettings = Field(default_factory=BatchSettings)
    loading: LoadingConfig = Field(default_factory=LoadingConfig)
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    web_fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    server_tools: ServerToolsConfig = Field(default_factory=ServerToolsConfig)

    @model_validator(mode="before")
    @classmethod
    def _one_form_of_models(cls, data: Any) -> Any:
        if isinstance(data, dict) and "models" in data:
            if "model" in data:
                raise ValueError("use either [model] or [[models]], not both")
            tables = data["models"]
            if not isinstance(tables, list) or not tables:
                raise ValueError("[[models]] should be one or more tables")
            for number, table in enumerate(tables, 1):
                if isinstance(table, dict) and "id" not in table:
                    raise ValueError(f"[[models]] #{number}: every model needs an id")
        return data

    @model_validator(mode="after")
    def _distinct_ids(self) -> Config:
        ids = [m.id for m in self.models]
        if len(set(ids)) != len(ids):
            raise ValueError("[[models]] ids must differ")
        return self

    def served(self) -> list[ModelConfig]:
        """The models this node serves: the ``[[models]]`` list, or the single ``[model]``
        and the default embedding model."""
        return [*self.models] or [self.model, default_embedding()]

    def left_out(self) -> list[str]:
        """What users may expect that this config does not serve, said at start: a
        ``[[models]]`` list replaces the default embedding model too."""
        if not self.models or any(m.kind == "embedding" for m in self.models):
            return []
        return [f"no embedding model: [[models]] lists none, so {DEFAULT_EMBEDDING_ID} is not "
                "served and /v1/infer/embeddings has no model; to serve it add [[models]] "
                f'id = "{DEFAULT_EMBEDDING_ID}", kind = "embedding", engine = "bert"']


def load_config(path: Path | None) -> Config:
    """The file at ``path`` (``None``: the defaults); ``ConfigError`` if it is unusable."""
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(said(path, exc.errors(), Config))) from None
    for model in config.served():
        if isinstance(model, ScriptedModel):  # its script is relative to the config file
            model.script = str(path.parent / model.script)
    return config
