"""Server-sent events: frames are serialised once, here."""

from __future__ import annotations

import json
from typing import Any


def dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def event_frame(event: str, payload: dict[str, Any]) -> bytes:
    """A named frame: ``event: <type>`` then ``data: <json>`` (Anthropic)."""
    return f"event: {event}\ndata: {dumps(payload)}\n\n".encode()


def data_frame(payload: dict[str, Any] | str) -> bytes:
    """An unnamed frame (OpenAI); a string is sent as is, e.g. ``[DONE]``."""
    body = payload if isinstance(payload, str) else dumps(payload)
    return f"data: {body}\n\n".encode()


SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def named_frame(event: str, data: bytes) -> bytes:
    """A named frame around JSON that is already serialised (a wire model's bytes)."""
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
