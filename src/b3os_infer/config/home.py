"""Where a node keeps its data: ``$B3OS_INFER_HOME``, else the platform's data directory."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import platformdirs


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
