"""Reading request bodies field by field, with exact paths in every error.

Each wire package describes its objects with ``Fields``: every key it reads is
declared, keys it accepts without using are listed as ignored, and ``finish``
refuses anything else as an unknown field, naming it as a path (``messages[0].role``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InvalidRequest, UnsupportedParameter

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
               list: "an array", dict: "an object"}


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def invalid(path: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{path}: {message}" if path else message, param=path or None)


def _matches(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


class Fields:
    """One JSON object being read; remembers which keys were consumed."""

    def __init__(self, data: Any, path: str = "", *, ignored: Iterable[str] = ()) -> None:
        if not isinstance(data, dict):
            raise invalid(path, "Input should be an object")
        self.data: dict[str, Any] = data
        self.path = path
        self._seen: set[str] = set()
        self._ignored = set(ignored)

    def at(self, key: str) -> str:
        return join(self.path, key)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        self._seen.add(key)
        return self.data.get(key)

    def take(self, key: str, kind: type, *, required: bool = False) -> Any:
        self._seen.add(key)
        value = self.data.get(key)
        if value is None:
            if required:
                raise invalid(self.at(key), "Field required")
            return None
        if not _matches(value, kind):
            raise invalid(self.at(key), f"Input should be {_TYPE_NAMES[kind]}")
        return float(value) if kind is float else value

    def number(self, key: str, *, low: float, high: float) -> float | None:
        value = self.take(key, float)
        if value is not None and not low <= value <= high:
            raise invalid(self.at(key), f"Input should be between {low:g} and {high:g}")
        return value

    def integer(self, key: str, *, low: int, high: int | None = None,
                required: bool = False) -> int | None:
        value = self.take(key, int, required=required)
        if value is not None and value < low:
            raise invalid(self.at(key), f"Input should be greater than or equal to {low}")
        if value is not None and high is not None and value > high:
            raise invalid(self.at(key), f"Input should be less than or equal to {high}")
        return value

    def finish(self) -> None:
        for key in self.data:
            if key not in self._seen and key not in self._ignored:
                raise UnsupportedParameter(f"{self.at(key)}: Extra inputs are not permitted",
                                           param=self.at(key))
