"""Errors of a request inside a batch, named by their place in the batch."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InferError, InvalidRequest


def inside(error: InferError, where: str) -> InferError:
    """``error`` of a request body, its param and message prefixed with ``where``."""
    param = f"{where}.{error.param}" if error.param else where
    message = f"{where}.{error.message}" if error.param else f"{where}: {error.message}"
    moved = type(error)(message, code=error.code, param=param)
    return moved


def unique_custom_ids(custom_ids: Sequence[str], where: str) -> None:
    """``where`` has a ``{}`` for the index of the request that repeats an id."""
    seen: set[str] = set()
    for index, custom_id in enumerate(custom_ids):
        if custom_id in seen:
            raise InvalidRequest(f"{where.format(index)}: {custom_id!r} is used by an earlier "
                                 "request; custom_id must be unique in a batch",
                                 param=where.format(index))
        seen.add(custom_id)
