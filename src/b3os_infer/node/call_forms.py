"""Tool calls that small models write without the ``<tool_call>`` tag.

Asked to call a tool, small models often answer with the call alone, as a bare JSON object
(``{"name": "Read", "arguments": {...}}``), inside a fenced block (```` ```json ... ``` ````)
or inline code (```` `{...}` ````), or with doubled braces (``{{"name": ...}}``, the
escaping of format strings); or they write some text first and the call on a line of its
own after it. When the request declares tools, such an object at the start of the reply or
of a line, naming one of them, is read as a call; anything else stays text (a call inside a
sentence too). This module only decides, from the start of a reply or line, whether and
where a call begins; ``reply.py`` reads the call itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# the start of a call object: its name, then its arguments (some models say "parameters")
CALL_HEADER = re.compile(
    r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*')
# text that may still grow into CALL_HEADER: held back until it does or cannot
_HEADER_SO_FAR = re.compile(
    r'\s*\{\s*(?:"(?:n(?:a(?:m(?:e(?:"\s*(?::\s*(?:"(?:(?:[^"\\]|\\.)*\\?)'
    r'(?:"\s*(?:,\s*(?:"[a-z]*(?:"\s*)?)?)?)?)?)?)?)?)?)?)?)?')
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?")


@dataclass(frozen=True)
class Lead:
    """A call found at the start of the reply: where its object starts, and the text that
    closes it (the object's own brace, or the fence)."""

    start: int
    close: str


NOT_A_CALL = Lead(-1, "")


def lead_call(text: str, final: bool, names: frozenset[str]) -> Lead | None:
    """Whether ``text`` (the reply so far, leading whitespace removed) opens with a call
    to one of ``names``: a ``Lead``, ``NOT_A_CALL``, or None while it cannot tell yet."""
    if text.startswith("```"):
        return _fenced(text, final, names)
    if "```".startswith(text) and not final:
        return None   # "", "`" or "``": maybe a fence
    if text.startswith("`") and not text.startswith("``"):   # inline code
        found = _bare(text[1:], final, names)
        return found if found is None or found is NOT_A_CALL else Lead(found.start + 1, "`")
    return _bare(text, final, names)


def _fenced(text: str, final: bool, names: frozenset[str]) -> Lead | None:
    fence = _FENCE.match(text)
    assert fence is not None   # text starts with ```
    if "\n" not in text and not final:
        return None   # the fence's first line is not complete
    inner = text[fence.end():]
    body = inner.lstrip()
    found = _bare(body, final, names)
    if found is None or found is NOT_A_CALL:
        return found
    return Lead(fence.end() + len(inner) - len(body) + found.start, "```")


def _bare(text: str, final: bool, names: frozenset[str]) -> Lead | None:
    if text.startswith("{{"):   # the object inside doubled braces, closed by both
        found = _bare(text[1:], final, names)
        return found if found is None or found is NOT_A_CALL else Lead(found.start + 1, "}}")
    if text == "{" and not final:
        return None   # maybe doubled
    if not text:
        return NOT_A_CALL if final else None
    if not text.startswith("{"):
        return NOT_A_CALL
    header = CALL_HEADER.match(text)
    if header is not None:
        name = json.loads(f'"{header.group(1)}"')
        return Lead(0, "}") if name in names else NOT_A_CALL
    undecided = _HEADER_SO_FAR.fullmatch(text) is not None
    return None if undecided and not final else NOT_A_CALL
