"""Bounded integer and number rules, checked value by value against their bounds."""

from __future__ import annotations

import random
import re

import pytest

from b3os_infer.engine.llamacpp.numeric_ranges import bounded_rule, integer_rule


def as_regex(gbnf: str) -> re.Pattern[str]:
    """Our rules use only literals, classes, groups and counted repeats: regex-translatable."""
    pattern = re.sub(r'"([^"]*)"', lambda m: re.escape(m.group(1)), gbnf).replace(" ", "")
    return re.compile(pattern)


def admitted(gbnf: str, candidates) -> set[str]:
    regex = as_regex(gbnf)
    return {c for c in candidates if regex.fullmatch(c)}


INTS = [str(i) for i in range(-1200, 1201)] + ["-0", "007", "01", "1e3", "+5"]


@pytest.mark.parametrize("low,high", [(0, 0), (1, 7), (0, 9), (5, 123), (-50, 50),
                                      (-1000, -20), (10, 1000), (99, 100), (None, 15),
                                      (-7, None), (0, None), (None, None), (120, None)])
def test_integers_match_exactly_the_range(low, high):
    expected = {str(i) for i in range(-1200, 1201)
                if (low is None or i >= low) and (high is None or i <= high)}
    assert admitted(integer_rule(low, high), INTS) == expected


def test_random_ranges():
    rng = random.Random(7)
    for _ in range(200):
        low, high = sorted(rng.randint(-3000, 3000) for _ in range(2))
        values = [str(rng.randint(-4000, 4000)) for _ in range(300)] + [str(low), str(high)]
        expected = {v for v in values if low <= int(v) <= high}
        assert admitted(integer_rule(low, high), values) == expected


def test_exclusive_bounds_and_numbers_stay_inside():
    rule = bounded_rule({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})
    assert admitted(rule, INTS) == {str(i) for i in range(1, 10)}
    number = bounded_rule({"type": "number", "minimum": -2.5, "maximum": 3})
    candidates = [f"{i}.{d}" for i in range(-5, 6) for d in (0, 5, 99)] + \
        [f"-{i}.{d}" for i in range(0, 5) for d in (5,)] + [str(i) for i in range(-5, 6)]
    for value in admitted(number, candidates):
        assert -2.5 <= float(value) <= 3, value
    assert {"3", "2.5", "-2", "0.99", "-1.5"} <= admitted(number, candidates)
