"""A small reader of delimited text records: the file the edit benchmarks rewrite.

Its content only has to be ordinary code that a model reads and writes back with one
change; nothing imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MAX_FIELDS = 64
QUOTE = '"'


class RecordError(ValueError):
    """A line that is no valid record."""

    def __init__(self, line_number: int, reason: str) -> None:
        super().__init__(f"line {line_number}: {reason}")
        self.line_number = line_number
        self.reason = reason


@dataclass
class Record:
    """One line of the input, split into named fields."""

    line_number: int
    values: dict[str, str] = field(default_factory=dict)

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def as_int(self, name: str) -> int:
        text = self.get(name).strip()
        if not text.lstrip("-").isdigit():
            raise RecordError(self.line_number, f"{name} is not a number: {text!r}")
        return int(text)


def split_line(line: str, separator: str = ",") -> list[str]:
    """Split one line on the separator, keeping separators inside quotes."""
    fields: list[str] = []
    current: list[str] = []
    quoted = False
    for char in line:
        if char == QUOTE:
            quoted = not quoted
        elif char == separator and not quoted:
            fields.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    fields.append("".join(current).strip())
    return fields


def parse_header(line: str, separator: str = ",") -> list[str]:
    """The field names of the first line: unique, not empty, at most MAX_FIELDS."""
    names = split_line(line, separator)
    if len(names) > MAX_FIELDS:
        raise RecordError(1, f"{len(names)} fields, at most {MAX_FIELDS} allowed")
    seen: set[str] = set()
    for name in names:
        if not name:
            raise RecordError(1, "a field name is empty")
        if name in seen:
            raise RecordError(1, f"the field name {name!r} repeats")
        seen.add(name)
    return names


def read_records(lines: Iterable[str], separator: str = ",") -> Iterator[Record]:
    """Records of every line after the header; blank lines and comments are skipped."""
    numbered = enumerate(lines, start=1)
    names: list[str] | None = None
    for number, raw in numbered:
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if names is None:
            names = parse_header(line, separator)
            continue
        values = split_line(line, separator)
        if len(values) != len(names):
            raise RecordError(number, f"{len(values)} fields where the header has "
                                      f"{len(names)}")
        yield Record(number, dict(zip(names, values, strict=True)))


def total(records: Iterable[Record], name: str) -> int:
    """The sum of one numeric field over all records."""
    return sum(record.as_int(name) for record in records)


def group_by(records: Iterable[Record], name: str) -> dict[str, list[Record]]:
    """Records grouped by the value of one field, in the order they came."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record.get(name), []).append(record)
    return groups
