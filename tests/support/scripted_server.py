"""The real server (``b3os-infer serve``) on the scripted engine, as its own process.

No model is loaded, so these servers start in seconds and need no heavy lock. ``env``
adds variables (``B3OS_INFER_DATABASE_URL`` for a shared PostgreSQL); ``toml`` adds
config tables (``[edge]`` with a ``redis_url``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.servers import free_port, wait_healthy

MODEL = "b3os/scripted"


@dataclass
class ScriptedServer:
    home: Path
    config: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1/infer"

    def environment(self) -> dict[str, str]:
        return {**os.environ, "B3OS_INFER_HOME": str(self.home), "PYTHONUNBUFFERED": "1",
                **self.env}

    def start(self) -> ScriptedServer:
        log = (self.home / "server.log").open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "b3os_infer.cli", "serve", "--port", str(self.port),
             "--config", str(self.config)],
            env=self.environment(), stdout=log, stderr=subprocess.STDOUT, text=True)
        log.close()
        try:
            wait_healthy(self.root, self.process)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{self.log()}") from None
        return self

    def log(self) -> str:
        path = self.home / "server.log"
        return path.read_text() if path.exists() else ""

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``b3os-infer ARGS`` as a separate process, on this server's home and database."""
        return subprocess.run([sys.executable, "-m", "b3os_infer.cli", *args],
                              env=self.environment(), capture_output=True, text=True,
                              check=True)

    def new_key(self, name: str = "test") -> str:
        return self.cli("keys", "create", "--name", name).stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def scripted_server(root: Path, replies: list[dict[str, Any]], *, toml: str = "",
                    env: dict[str, str] | None = None) -> ScriptedServer:
    """A server (not started) with its own home under ``root``, serving ``MODEL`` from
    ``replies`` (a last ``OK.`` that repeats is added)."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)
    script = {"replies": [*replies, {"text": "OK.", "repeat": True}]}
    (root / "script.json").write_text(json.dumps(script))
    config = root / "b3os.toml"
    config.write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\n'
                      f'script = "script.json"\n{toml}')
    return ScriptedServer(home, config, dict(env or {}))
