"""The fleet commands of docs/edge.md ("Fleet mode"), read from the page and run as written,
each on the host its comment names (``# on 10.0.0.5``)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "edge.md"
HOST_COMMENT = re.compile(r"#\s*on\s+(\d+\.\d+\.\d+\.\d+)\s*$")


@dataclass(frozen=True)
class DocCommand:
    host: str          # the address of the host it runs on
    words: list[str]   # as the shell splits them

    @property
    def role(self) -> str:
        """``node``, ``edge`` or ``keys``: the subcommand."""
        return self.words[1]

    def argv(self) -> list[str]:
        """The command with ``b3os-infer`` run by this interpreter (the same entry point)."""
        assert self.words[0] == "b3os-infer", self.words
        return [sys.executable, "-m", "b3os_infer.cli", *self.words[1:]]

    def option(self, name: str) -> str:
        return self.words[self.words.index(name) + 1]


@dataclass(frozen=True)
class FleetRecipe:
    secret_line: str
    commands: list[DocCommand]

    def secret(self) -> str:
        """What the page's ``export`` line sets, evaluated by bash as it would be."""
        shown = subprocess.run(["bash", "-c", self.secret_line +
                                '\nprintf %s "$B3OS_INFER_NODE_SECRET"'],
                               capture_output=True, text=True, check=True)
        assert len(shown.stdout) >= 32, f"{self.secret_line!r} set no secret (openssl?)"
        return shown.stdout

    def of(self, role: str) -> list[DocCommand]:
        return [c for c in self.commands if c.role == role]


def _lines(body: str) -> list[str]:
    return [line for line in body.replace("\\\n", " ").splitlines() if line.strip()]


def read_recipe(doc: Path = DOC) -> FleetRecipe:
    """The first bash block under ``## Fleet mode``."""
    section = doc.read_text().split("## Fleet mode", 1)[1]
    body = section.split("```bash\n", 1)[1].split("```", 1)[0]
    secret_line, commands = "", []
    for line in _lines(body):
        if line.startswith("export B3OS_INFER_NODE_SECRET="):
            secret_line = line
            continue
        where = HOST_COMMENT.search(line)
        assert where, f"docs/edge.md: no '# on ADDRESS' on {line!r}"
        commands.append(DocCommand(where.group(1), shlex.split(line[:where.start()])))
    assert secret_line, "docs/edge.md: the fleet block sets no B3OS_INFER_NODE_SECRET"
    return FleetRecipe(secret_line, commands)
