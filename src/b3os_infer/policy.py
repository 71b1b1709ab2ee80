"""Field policy tables, shared by both wire formats.

A table puts every request field (or content type, tool type, header) of one API object
in exactly one list: supported (honoured as the real API does), ignored (accepted; it
cannot change the answer here) or refused (400 ``unsupported_parameter`` naming the field).
Each API's tables render into its page in ``docs/``; tests keep both in step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from .errors import UnsupportedParameter
from .fields import Fields, join

Status = Literal["supported", "ignored", "refused"]

_LABELS = {"supported": "Supported", "ignored": "Accepted and ignored",
           "refused": "Refused (400, `unsupported_parameter`)"}


@dataclass(frozen=True)
class Rule:
    name: str
    status: Status
    note: str


def rules(*rows: tuple[str, Status, str]) -> tuple[Rule, ...]:
    return tuple(Rule(*row) for row in rows)


def names(table: tuple[Rule, ...], status: Status) -> tuple[str, ...]:
    return tuple(r.name for r in table if r.status == status)


def rule(table: tuple[Rule, ...], name: str) -> Rule | None:
    """The rule for ``name``; a rule ending in ``*`` covers every name with its prefix."""
    for item in table:
        if item.name == name or (item.name.endswith("*") and name.startswith(item.name[:-1])):
            return item
    return None


def table_fields(data: Any, table: tuple[Rule, ...], path: str = "") -> Fields:
    """An object read under ``table``: its refused fields are refused here, naming the
    field; its ignored ones are accepted; anything else the reader does not take is
    refused by ``Fields.finish``."""
    fields = Fields(data, path, ignored=names(table, "ignored"))
    for name in names(table, "refused"):
        if fields.data.get(name) is not None:
            item = rule(table, name)
            at = join(path, name)
            raise UnsupportedParameter(f"{at}: not supported here ({item.note if item else ''})",
                                       param=at)
    return fields


def check_kind(table: tuple[Rule, ...], kind: str, path: str, what: str) -> None:
    """Refuse a content or tool ``kind`` the table refuses or does not know."""
    item = rule(table, kind)
    if item is None or item.status == "refused":
        why = item.note if item else f"unknown {what} type"
        raise UnsupportedParameter(f"{path}: {what}s of type {kind!r} are not supported here "
                                   f"({why})", param=path)


def render_tables(tables: Iterable[tuple[str, tuple[Rule, ...]]]) -> str:
    """Markdown: per table a heading, then one list per status."""
    out = []
    for title, table in tables:
        out.append(f"### {title}\n")
        for status in ("supported", "ignored", "refused"):
            rows = [r for r in table if r.status == status]
            if not rows:
                continue
            out.append(f"**{_LABELS[status]}**\n")
            out.append("| name | notes |\n|---|---|")
            out.extend(f"| `{r.name}` | {r.note} |" for r in rows)
            out.append("")
    return "\n".join(out)
