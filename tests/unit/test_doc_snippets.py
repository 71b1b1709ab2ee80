"""What the README and docs/ tell a newcomer to type holds: every config snippet loads (its
tables, keys, types and bounds are the loader's), every ``b3os-infer`` command parses with the
flags the CLI has, and every ``make`` target named exists."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from b3os_infer.cli import parser
from b3os_infer.config import ConfigError, load_config
from b3os_infer.launch import BUILDERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# TOML blocks of other programs' files, named by the comment on their first line
OTHER_FILES = {"$CODEX_HOME/config.toml"}
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "&", "2>&1"}


@dataclass(frozen=True)
class Snippet:
    doc: Path
    line: int
    language: str
    text: str

    def __str__(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Snippet]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in re.finditer(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", text, re.S | re.M):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Snippet(doc, line, match.group(2), textwrap.dedent(match.group(3))))
    return found


BLOCKS = _blocks()
TOML = [b for b in BLOCKS if b.language == "toml"]


def _names_another_file(block: Snippet) -> bool:
    first = block.text.splitlines()[0]
    return first.startswith("# ") and first[2:].strip() in OTHER_FILES


@pytest.mark.parametrize("block", [b for b in TOML if not _names_another_file(b)], ids=str)
def test_config_snippet_loads(tmp_path, block):
    path = tmp_path / "b3os.toml"
    path.write_text(block.text)
    try:
        load_config(path)
    except ConfigError as exc:
        pytest.fail(f"{block}: {exc}")


def test_the_toml_of_other_programs_is_named_on_its_first_line():
    others = [b for b in TOML if _names_another_file(b)]
    assert [str(b) for b in others] and all("model_provider" in b.text for b in others)


# ---- commands ---------------------------------------------------------------------------

def _command_lines() -> list[tuple[Snippet, str]]:
    """Shell lines of code blocks (continuations joined) and inline code spans."""
    lines = []
    for block in BLOCKS:
        if block.language not in ("", "bash", "sh", "shell", "console"):
            continue
        for line in block.text.replace("\\\n", " ").splitlines():
            lines.append((block, line.strip().removeprefix("$ ")))
    for doc in DOCS:
        text = doc.read_text()
        for match in re.finditer(r"(?<!`)`([^`\n]+)`(?!`)", text):
            number = text.count("\n", 0, match.start()) + 1
            lines.append((Snippet(doc, number, "inline", match.group(1)), match.group(1)))
    return lines


def _argv(line: str, program: str) -> list[str] | None:
    """The arguments after ``program`` on a shell line, up to its first operator."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):   # VAR=value prefixes
        words.pop(0)
    if not words or words[0].rsplit("/", 1)[-1] != program:
        return None
    argv = []
    for word in words[1:]:
        if word in SHELL_OPERATORS:
            break
        argv.append(word)
    return argv


def _elided(argv: list[str]) -> bool:
    """A command shown in part (``serve ...``, ``keys create [--scope S]``)."""
    return any(word in ("...", "…") or word.startswith(("[", "<")) for word in argv)


CLI = [(s, argv) for s, line in _command_lines()
       if (argv := _argv(line, "b3os-infer")) and not _elided(argv)]
MAKE = [(s, argv) for s, line in _command_lines() if (argv := _argv(line, "make")) is not None]


@pytest.mark.parametrize("snippet, argv", CLI, ids=[f"{s}:{' '.join(a)}" for s, a in CLI])
def test_documented_b3os_infer_command_parses(snippet, argv):
    """A command of a code block parses whole; one named in prose (``b3os-infer edge``) may
    leave out required arguments, but its commands and flags must exist."""
    if argv[0] in BUILDERS:   # the rest is the agent's own (cli.main)
        argv = argv[:1]
    said = io.StringIO()
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser().parse_args(argv)
        except SystemExit as exit:
            error = said.getvalue()
            partial = snippet.language == "inline" and "arguments are required" in error
            if exit.code and not partial:
                pytest.fail(f"{snippet}: b3os-infer {' '.join(argv)}: {error}")


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


@pytest.mark.parametrize("snippet, argv", MAKE, ids=[f"{s}:{' '.join(a)}" for s, a in MAKE])
def test_documented_make_target_exists(snippet, argv):
    targets = [w for w in argv if "=" not in w and not w.startswith("-")]
    missing = set(targets) - _make_targets()
    assert not missing, f"{snippet}: make {' '.join(argv)}: no target {sorted(missing)}"


def test_the_docs_name_commands_and_targets_to_check():
    assert len(CLI) >= 20 and len(MAKE) >= 5 and len(TOML) >= 15
