"""GBNF for integers and numbers within JSON Schema bounds.

llama.cpp's Python schema converter leaves ``minimum``/``maximum`` unenforced; these
rules make bounded integers and numbers valid by construction. Every value the rule
admits is within the bounds; for numbers with fractional bounds the admitted set is a
subset of the valid one (the integer part is bounded by the enclosed integers).
"""

from __future__ import annotations

import math
from typing import Any


def _same_length(low: str, high: str) -> str:
    """Digit strings of one length from ``low`` to ``high`` (inclusive) as a GBNF group.

    Linear in the number of digits: full ranges collapse into ``[0-9]{n}``.
    """
    rest = len(low) - 1
    if low == "0" * len(low) and high == "9" * len(high):
        return f"[0-9]{{{len(low)}}}"
    if rest == 0:
        return f"[{low}-{high}]"
    if low[0] == high[0]:
        return f'"{low[0]}" {_same_length(low[1:], high[1:])}'
    first, last = int(low[0]), int(high[0])
    alternatives = []
    if low[1:] != "0" * rest:
        alternatives.append(f'"{low[0]}" {_same_length(low[1:], "9" * rest)}')
        first += 1
    top_whole = high[1:] == "9" * rest
    middle_last = last if top_whole else last - 1
    if first <= middle_last:
        alternatives.append(f"[{first}-{middle_last}] [0-9]{{{rest}}}")
    if not top_whole:
        alternatives.append(f'"{high[0]}" {_same_length("0" * rest, high[1:])}')
    return "(" + " | ".join(alternatives) + ")"


def _natural(low: int, high: int | None) -> str:
    """Non-negative integers in [low, high] (``high`` None: no upper bound)."""
    alternatives = []
    top = high if high is not None else 10 ** len(str(low)) - 1
    for length in range(len(str(low)), len(str(top)) + 1):
        first = max(low, 10 ** (length - 1) if length > 1 else 0)
        last = min(top, 10 ** length - 1)
        if first <= last:
            alternatives.append(_same_length(str(first), str(last)))
    if high is None:
        alternatives.append(f"[1-9] [0-9]{{{len(str(low))},}}")
    return "(" + " | ".join(alternatives) + ")"


def integer_rule(low: int | None, high: int | None) -> str:
    """Integers in [low, high]; either bound may be None (unbounded)."""
    if low is not None and high is not None and low > high:
        raise ValueError(f"minimum {low} is above maximum {high}")
    parts = []
    if low is None or low < 0:
        negative_top = None if low is None else -low
        negative_low = 1 if high is None or high >= 0 else -high
        parts.append(f'"-" {_natural(negative_low, negative_top)}')
    if high is None or high >= 0:
        parts.append(_natural(max(low or 0, 0), high))
    return "(" + " | ".join(parts) + ")"


def _bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    """Integer bounds whose range lies inside the schema's (for numbers: a subset)."""
    lows, highs = [], []
    if isinstance(schema.get("minimum"), int | float):
        lows.append(math.ceil(schema["minimum"]))
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        lows.append(math.floor(schema["exclusiveMinimum"]) + 1)
    if isinstance(schema.get("maximum"), int | float):
        highs.append(math.floor(schema["maximum"]))
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        highs.append(math.ceil(schema["exclusiveMaximum"]) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def has_bounds(schema: dict[str, Any]) -> bool:
    return any(key in schema for key in ("minimum", "maximum", "exclusiveMinimum",
                                         "exclusiveMaximum"))


def bounded_rule(schema: dict[str, Any]) -> str:
    """The GBNF body (without trailing space) for a bounded integer or number schema."""
    low, high = _bounds(schema)
    whole = integer_rule(low, high)
    if schema.get("type") == "integer":
        return whole
    fraction = '"." [0-9]{1,15}'
    alternatives = [whole]
    # i.f stays in [low, high]: for i >= 0 when i + 1 <= high; for i < 0 when i - 1 >= low
    positive_low, positive_high = max(low, 0) if low is not None else 0, \
        None if high is None else high - 1
    if positive_high is None or positive_low <= positive_high:
        alternatives.append(f"{integer_rule(positive_low, positive_high)} {fraction}")
    negative_low = None if low is None else low + 1
    negative_high = -1 if high is None else min(high, -1)
    if negative_low is None or negative_low <= negative_high:
        alternatives.append(f"{integer_rule(negative_low, negative_high)} {fraction}")
    return "(" + " | ".join(alternatives) + ")"
