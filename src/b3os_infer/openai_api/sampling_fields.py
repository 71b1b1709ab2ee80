"""Sampling fields shared by chat completions and legacy completions, into the core."""

from __future__ import annotations

from typing import Protocol

from ..core import Sampling


class SamplingFields(Protocol):
    """What both request models say about sampling."""

    @property
    def temperature(self) -> float | None: ...
    @property
    def top_p(self) -> float | None: ...
    @property
    def top_k(self) -> int | None: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def presence_penalty(self) -> float | None: ...
    @property
    def frequency_penalty(self) -> float | None: ...
    @property
    def logit_bias(self) -> dict[str, float] | None: ...


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def sampling_of(fields: SamplingFields) -> Sampling:
    return Sampling(
        temperature=_or(fields.temperature, 1.0),
        top_p=_or(fields.top_p, 1.0),
        top_k=fields.top_k or 0,
        seed=fields.seed,
        presence_penalty=_or(fields.presence_penalty, 0.0),
        frequency_penalty=_or(fields.frequency_penalty, 0.0),
        logit_bias=tuple((int(token), bias) for token, bias in
                         (fields.logit_bias or {}).items()),
    )
