"""Which API a path belongs to (its error envelope: ``envelopes.py``)."""

from __future__ import annotations

from typing import Literal

ApiName = Literal["anthropic", "openai"]

BASE = "/v1/infer"
ANTHROPIC_PREFIX = BASE + "/v1/"


def api_for_path(path: str) -> ApiName:
    return "anthropic" if path.startswith(ANTHROPIC_PREFIX) or path == BASE + "/v1" \
        else "openai"
