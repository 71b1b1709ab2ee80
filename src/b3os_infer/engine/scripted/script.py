"""What the scripted engine answers: replies written as the text a model would write.

A script is a list of replies. Each request takes the first reply not used yet whose
``when`` matches its prompt; a reply with ``repeat`` is never used up. A reply is text (cut
into tokens at word boundaries, spaces leading) or an explicit list of tokens, and may
say how long each token takes, at which token the engine fails, that the engine refuses
the request at admission, and how many prompt tokens it reports as cached.

The same script is written as JSON or TOML for ``engine = "scripted"`` in the config::

    {"replies": [{"text": "Hello!", "when": {"last_user_contains": "hi"}},
                 {"tokens": ["Sor", "ry"], "fail_at": 1, "error": "the GPU fell off"}]}
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from ...errors import InferError, InternalError, InvalidRequest, Overloaded

Refusal = Literal["overloaded", "invalid_request", "internal"]
_WORDS = re.compile(r"\s*\S+|\s+")
_REFUSALS: dict[str, type[InferError]] = {
    "overloaded": Overloaded, "invalid_request": InvalidRequest, "internal": InternalError}


def split_tokens(text: str) -> list[str]:
    """``"Hello big world"`` -> ``["Hello", " big", " world"]``."""
    return _WORDS.findall(text)


@dataclass(frozen=True)
class When:
    """A condition on the prompt; every condition given must hold."""

    last_user_contains: str | None = None   # the last user turn (tool results are in it)
    prompt_contains: str | None = None      # anywhere in the rendered prompt

    def matches(self, prompt: str, last_user: str) -> bool:
        if self.last_user_contains is not None and self.last_user_contains not in last_user:
            return False
        return self.prompt_contains is None or self.prompt_contains in prompt


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tokens: tuple[str, ...] = ()            # the reply as tokens; else ``text`` is cut
    when: When = field(default_factory=When)
    repeat: bool = False
    delay_s: float = 0.0                    # before each token
    first_delay_s: float = 0.0              # before admission (time to first token)
    fail_at: int | None = None              # the engine fails after this many tokens
    error: str = "the scripted engine failed"
    refuse: Refusal | None = None           # the engine refuses the request at admission
    cached_tokens: int = 0                  # reported as the reused prefix (Admitted)

    def pieces(self) -> list[str]:
        return list(self.tokens) if self.tokens else split_tokens(self.text)

    def refusal(self) -> InferError | None:
        if self.refuse is None:
            return None
        return _REFUSALS[self.refuse](f"the scripted engine refused: {self.error}")

    def failure(self) -> InferError:
        return InternalError(self.error)


@dataclass(frozen=True)
class Script:
    replies: tuple[Reply, ...]
    context_window: int = 8192
    template: Literal["native", "plain"] = "native"   # see scripted_templates.py
    # report, as cached, the longest prefix a prompt shares with an earlier one (as an
    # engine whose prefix cache never evicts would); a reply's cached_tokens overrides it
    prefix_cache: bool = False


class ScriptError(ValueError):
    """A script file we cannot use; the message says where."""


def load_script(path: Path) -> Script:
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ScriptError(f"{path}: {exc}") from exc
    return script_from_dict(data, str(path))


def script_from_dict(data: Any, where: str = "script") -> Script:
    if not isinstance(data, dict) or not isinstance(data.get("replies"), list):
        raise ScriptError(f"{where}: a script is a table with a list of replies")
    replies = tuple(_reply(r, f"{where} replies[{i}]") for i, r in enumerate(data["replies"]))
    options = _known(data, {"replies", "context_window", "template", "prefix_cache"}, where)
    template = options.get("template", "native")
    if template not in ("native", "plain"):
        raise ScriptError(f"{where}: template should be native or plain")
    return Script(replies, int(options.get("context_window", 8192)), template,
                  bool(options.get("prefix_cache", False)))


def _reply(data: Any, where: str) -> Reply:
    if not isinstance(data, dict):
        raise ScriptError(f"{where}: a reply is a table")
    values = _known(data, {f.name for f in fields(Reply)}, where)
    if "tokens" in values:
        values["tokens"] = tuple(str(t) for t in values["tokens"])
    if "when" in values:
        values["when"] = When(**_known(values["when"], {f.name for f in fields(When)},
                                       where + ".when"))
    if values.get("refuse") not in (None, *_REFUSALS):
        raise ScriptError(f"{where}: refuse should be one of {', '.join(_REFUSALS)}")
    return Reply(**values)


def _known(data: Any, names: set[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ScriptError(f"{where}: should be a table")
    unknown = set(data) - names
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    return dict(data)
