"""A fleet deployed as docs/edge.md says, on hosts of a private network (``lan.py``).

Each host has a directory (its configs and its ``B3OS_INFER_HOME``); every process runs in
its host's directory and network, with its output in ``<dir>/<role>-<port>.log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from support.doc_fleet import DocCommand, FleetRecipe
from support.lan import Host, inside

MODEL = "b3os/scripted"
LONG_ASK = "Tell a long story"


def node_name(address: str) -> str:
    return "node-" + address.rsplit(".", 1)[1]


def node_script(address: str) -> dict[str, Any]:
    """Replies that say which node wrote them; a long, slow one to cut mid-stream."""
    name = node_name(address)
    story = " ".join(f"{name} word {i}." for i in range(150))
    return {"template": "native", "context_window": 8192, "replies": [
        {"text": story, "delay_s": 0.05, "repeat": True,
         "when": {"last_user_contains": LONG_ASK}},
        {"text": f"Served by {name}.", "repeat": True}]}


@dataclass
class Deployment:
    recipe: FleetRecipe
    hosts: dict[str, Host]            # address -> host
    client: Host
    dirs: dict[str, Path]             # address -> the host's directory
    secret: str
    running: dict[str, tuple[DocCommand, subprocess.Popen[str]]] = field(default_factory=dict)

    def _env(self, address: str) -> dict[str, str]:
        return {**os.environ, "B3OS_INFER_HOME": str(self.dirs[address] / "home"),
                "PYTHONUNBUFFERED": "1", "B3OS_INFER_NODE_SECRET": self.secret}

    @staticmethod
    def label(command: DocCommand) -> str:
        return f"{command.role}-{command.host}-{command.option('--port')}"

    def start(self, command: DocCommand) -> None:
        label = self.label(command)
        with (self.dirs[command.host] / f"{label}.log").open("a") as log, \
                inside(self.hosts[command.host]):
            process = subprocess.Popen(command.argv(), cwd=self.dirs[command.host],
                                       env=self._env(command.host), stdout=log,
                                       stderr=subprocess.STDOUT, text=True)
        self.running[label] = (command, process)

    def run(self, command: DocCommand) -> str:
        """A command that ends (``keys create``): its output."""
        with inside(self.hosts[command.host]):
            done = subprocess.run(command.argv(), cwd=self.dirs[command.host],
                                  env=self._env(command.host), capture_output=True,
                                  text=True, check=True)
        return done.stdout

    def kill(self, label: str) -> None:
        """SIGKILL: the node dies as a machine that loses power, sockets and all."""
        _, process = self.running[label]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def restart(self, label: str) -> None:
        self.start(self.running[label][0])

    def stop_all(self) -> None:
        for _, process in self.running.values():
            if process.poll() is None:
                process.terminate()
        for _, process in self.running.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log(self, label: str) -> str:
        command = self.running[label][0]
        return (self.dirs[command.host] / f"{label}.log").read_text()

    def edges(self) -> list[str]:
        """Each edge's address as its --advertise-url gives it (the nodes call it there)."""
        return [c.option("--advertise-url") for c in self.recipe.of("edge")]

    def node_label(self, name: str) -> str:
        return next(self.label(c) for c in self.recipe.of("node")
                    if node_name(c.host) == name)

    @contextmanager
    def on_client(self) -> Iterator[None]:
        """The calling thread on the client's host: SDK clients are made and used here."""
        with inside(self.client):
            yield

    def nodes_up(self, edge: str) -> int:
        with self.on_client():
            nodes = httpx.get(edge + "/healthz", timeout=5).json()["nodes"]
        return sum(bool(n["up"]) for n in nodes.values())

    def wait_nodes_up(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        for edge in self.edges():
            while True:
                try:
                    if self.nodes_up(edge) == count:
                        break
                except (httpx.HTTPError, KeyError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{edge} never saw {count} nodes up:\n" + self._logs())
                time.sleep(0.3)

    def _logs(self) -> str:
        return "\n".join(f"--- {label}\n{self.log(label)[-3000:]}" for label in self.running)


def write_configs(dirs: dict[str, Path], recipe: FleetRecipe, database_url: str,
                  redis_url: str) -> None:
    """``node.toml`` (the scripted engine) on every node host, ``edge.toml`` (the shared
    PostgreSQL and Redis) on the edge host."""
    for command in recipe.of("node"):
        where = dirs[command.host]
        (where / "replies.json").write_text(json.dumps(node_script(command.host)))
        (where / command.option("--config")).write_text(
            f'[model]\nid = "{MODEL}"\nengine = "scripted"\nscript = "replies.json"\n')
    for command in recipe.of("edge"):
        (dirs[command.host] / command.option("--config")).write_text(
            f'[edge]\ndatabase_url = "{database_url}"\nredis_url = "{redis_url}"\n')
