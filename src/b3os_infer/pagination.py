"""Cursor pagination by id, as Anthropic's list endpoints do it (``limit``, ``after_id``,
``before_id``): one implementation for the node's route and the edge's merged listing.

It names no wire package: the callers hand it their query parameters as a mapping
(Starlette's ``request.query_params`` is one) and send the page it returns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidRequest

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
_INTEGER = re.compile(r"[+-]?\d+")


def page_limit(query: Mapping[str, str], maximum: int = MAX_LIMIT) -> int:
    """``limit`` from the query: an integer in 1..``maximum``, 20 when absent."""
    raw = query.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not _INTEGER.fullmatch(raw.strip()):
        raise InvalidRequest("limit: Input should be a valid integer", param="limit")
    limit = int(raw)
    if limit < 1:
        raise InvalidRequest("limit: Input should be greater than or equal to 1", param="limit")
    if limit > maximum:
        raise InvalidRequest(f"limit: Input should be less than or equal to {maximum}",
                             param="limit")
    return limit


def cursor_window(ids: Sequence[str], after_id: str | None,
                  before_id: str | None) -> tuple[int, int]:
    """The slice ``[lower, upper)`` of ``ids`` strictly between the cursors. An unknown
    cursor gives an empty window: nothing is known to come after or before it."""
    lower, upper = 0, len(ids)
    if after_id:
        lower = ids.index(after_id) + 1 if after_id in ids else upper
    if before_id:
        upper = ids.index(before_id) if before_id in ids else 0
    return lower, max(lower, upper)


def page_window(ids: Sequence[str], query: Mapping[str, str]) -> tuple[int, int, bool]:
    """The page of a listing with these ``ids`` (in order) that ``query`` asks for, as
    ``(start, end, has_more)``. Raises ``InvalidRequest`` (param ``limit``) for a bad limit.

    With ``before_id`` the page is the ``limit`` items just before it and ``has_more`` says
    whether more come before the page (the SDKs then page on with ``first_id``); otherwise
    the page starts after ``after_id`` and ``has_more`` says whether more come after it.
    """
    limit = page_limit(query)
    before_id = query.get("before_id")
    lower, upper = cursor_window(ids, query.get("after_id"), before_id)
    if before_id:
        start = max(lower, upper - limit)
        return start, upper, start > lower
    end = min(upper, lower + limit)
    return lower, end, end < upper


def page_by_id(items: Sequence[dict[str, Any]], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of ``items`` (JSON objects with an ``id``, in listing order) in Anthropic's
    shape: ``data``, ``has_more``, ``first_id``, ``last_id`` (see ``page_window``)."""
    start, end, has_more = page_window([str(item["id"]) for item in items], query)
    page = list(items[start:end])
    return {"data": page, "has_more": has_more,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None}
