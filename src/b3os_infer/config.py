"""Settings: defaults, the TOML file that ``serve --config FILE`` reads, and the home dir."""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from .node.models import DEFAULT_MODEL_ID, DEFAULT_MODEL_NAME


class ConfigError(ValueError):
    """A config file we cannot use; the message says which key and why."""


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000


@dataclass
class EngineConfig:
    threads: int = 2
    parallel: int = 8
    batch_tokens: int = 512


@dataclass
class ModelConfig:
    id: str = DEFAULT_MODEL_ID
    display_name: str = DEFAULT_MODEL_NAME
    path: str | None = None
    context_window: int | None = None


@dataclass
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    model: ModelConfig = field(default_factory=ModelConfig)


_SECTIONS = {"server": ServerConfig, "engine": EngineConfig, "model": ModelConfig}


def load_config(path: Path | None) -> Config:
    config = Config()
    if path is None:
        return config
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    for name, table in data.items():
        if name not in _SECTIONS or not isinstance(table, dict):
            raise ConfigError(f"{path}: unknown section [{name}]")
        _apply(getattr(config, name), table, f"{path} [{name}]")
    return config


def _apply(section: Any, table: dict[str, Any], where: str) -> None:
    known = {f.name: f for f in fields(section)}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r}")
        expected = type(getattr(section, key))
        if getattr(section, key) is not None and not isinstance(value, expected):
            raise ConfigError(f"{where}: {key} should be {expected.__name__}")
        setattr(section, key, value)


@dataclass(frozen=True)
class Home:
    """Where a node keeps its data: the key database and the node secret."""

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

    def node_secret(self) -> bytes:
        path = self.root / "node_secret"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
        return bytes.fromhex(path.read_text().strip())
