"""The README's and the docs' snippets hold: every TOML block is valid TOML and every B3OS
config among them loads; every `b3os-infer` command line parses with the CLI's own parser;
every `make` line names a target and variables the Makefile has."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from b3os_infer.cli import parser
from b3os_infer.config import load_config
from b3os_infer.launch import BUILDERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
SHELL = ("bash", "sh", "shell", "console")
# where a shell command ends
OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", ">&", "(", ")"}


def blocks(*languages: str) -> list[tuple[str, str]]:
    """``(where, body)`` of every fenced block in those languages."""
    return [(f"{doc.relative_to(ROOT)} block {n}", body) for doc in DOCS
            for n, (lang, body) in enumerate(BLOCK.findall(doc.read_text()))
            if lang in languages]


def command_lines() -> list[tuple[str, list[str]]]:
    """Each shell line, continuations joined and comments cut, as words."""
    lines = []
    for where, body in blocks(*SHELL):
        for line in body.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
            if words:
                lines.append((where, words))
    return lines


def after(words: list[str], program: str) -> list[str] | None:
    """The words given to ``program`` (``b3os-infer`` or ``.venv/bin/b3os-infer``), up to
    the end of its command; ``...`` (words left out in the docs) dropped."""
    for i, word in enumerate(words):
        if word == program or word.endswith("/" + program):
            rest = []
            for arg in words[i + 1:]:
                if arg in OPERATORS:
                    break
                if arg != "...":
                    rest.append(arg)
            return rest
    return None


def is_codex_config(data: dict[str, object]) -> bool:
    return "model_provider" in data or "model_providers" in data


@pytest.mark.parametrize(("where", "body"), blocks("toml"), ids=lambda v: str(v)[:40])
def test_every_toml_snippet_parses_and_every_b3os_config_loads(where, body, tmp_path):
    data = tomllib.loads(body)
    if is_codex_config(data):
        return
    config = tmp_path / "b3os.toml"
    config.write_text(body)
    load_config(config)


B3OS_LINES = [(where, args) for where, words in command_lines()
              if (args := after(words, "b3os-infer")) is not None]


def test_the_docs_show_b3os_infer_commands():
    assert len(B3OS_LINES) >= 20


@pytest.mark.parametrize(("where", "args"), B3OS_LINES, ids=lambda v: str(v)[:60])
def test_every_b3os_infer_command_in_the_docs_parses(where, args):
    if args and args[0] in BUILDERS:
        return  # the agent's own arguments follow; b3os-infer does not parse them
    try:
        parser().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{where}: b3os-infer {' '.join(args)} does not parse ({exc.code})")


MAKEFILE = (ROOT / "Makefile").read_text()
TARGETS = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, re.M))
MAKE_LINES = [(where, args) for where, words in command_lines()
              if (args := after(words, "make")) is not None]


@pytest.mark.parametrize(("where", "args"), MAKE_LINES, ids=lambda v: str(v)[:60])
def test_every_make_command_in_the_docs_names_a_target_and_variables_it_has(where, args):
    for arg in args:
        name, equals, _ = arg.partition("=")
        if equals:
            assert f"$({name})" in MAKEFILE, f"{where}: make has no variable {name}"
        else:
            assert arg in TARGETS, f"{where}: make has no target {arg}"
