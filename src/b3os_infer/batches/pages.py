"""OpenAI's cursor pages: ``limit`` and ``after`` (an id in the listing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from ..pagination import page_limit


class HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=HasId)


def after_page(rows: Sequence[T], query: Mapping[str, str]) -> tuple[list[T], bool]:
    """The ``limit`` rows after the one whose id is ``after``, and whether more follow."""
    limit = page_limit(query)
    start = 0
    if after := query.get("after"):
        found = [i for i, row in enumerate(rows) if row.id == after]
        start = found[0] + 1 if found else len(rows)
    page = list(rows[start:start + limit])
    return page, start + limit < len(rows)
