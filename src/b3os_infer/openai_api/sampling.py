"""Sampling fields shared by chat completions and legacy completions."""

from __future__ import annotations

from typing import Any

from ..core import Sampling
from ..fields import Fields, invalid, join


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def sampling_fields(fields: Fields) -> Sampling:
    return Sampling(
        temperature=_or(fields.number("temperature", low=0.0, high=2.0), 1.0),
        top_p=_or(fields.number("top_p", low=0.0, high=1.0), 1.0),
        top_k=_or(fields.integer("top_k", low=0), 0),
        seed=fields.take("seed", int),
        presence_penalty=_or(fields.number("presence_penalty", low=-2.0, high=2.0), 0.0),
        frequency_penalty=_or(fields.number("frequency_penalty", low=-2.0, high=2.0), 0.0),
        logit_bias=_logit_bias(fields),
    )


def _logit_bias(fields: Fields) -> tuple[tuple[int, float], ...]:
    raw = fields.take("logit_bias", dict) or {}
    biases = []
    for key, value in raw.items():
        path = join("logit_bias", key)
        if not key.isdigit():
            raise invalid(path, "keys should be token ids (non-negative integers)")
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not -100 <= value <= 100:
            raise invalid(path, "Input should be a number between -100 and 100")
        biases.append((int(key), float(value)))
    return tuple(biases)


def stops(fields: Fields) -> list[str]:
    stop = fields.raw("stop")
    if stop is None:
        return []
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, list) or len(items) > 4:
        raise invalid("stop", "Input should be a string or an array of at most 4 strings")
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise invalid(join("stop", i), "Input should be a non-empty string")
    return list(items)
