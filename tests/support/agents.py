"""The agent CLIs the live tests run: the pinned ones (tests/js, locked) and the newest ones
(tests/js/newest, resolved to npm's `latest` at every fresh `make install-dev`).

When both are the same version the CLI is run once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "js"
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}


@dataclass(frozen=True)
class AgentCli:
    program: str
    version: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.program}-{self.version}"


def _installed(program: str, root: Path) -> AgentCli:
    package = root / "node_modules" / PACKAGES[program] / "package.json"
    version = json.loads(package.read_text())["version"]
    return AgentCli(program, version, root / "node_modules" / ".bin" / program)


def installs(program: str) -> list[AgentCli]:
    """The pinned install, then the newest when it is another version."""
    pinned = _installed(program, JS)
    newest = _installed(program, JS / "newest")
    return [pinned] if newest.version == pinned.version else [pinned, newest]
