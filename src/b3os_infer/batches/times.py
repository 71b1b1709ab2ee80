"""Timestamps as each API writes them."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(seconds: float | None) -> str | None:
    """Anthropic's: ``2026-12-01T12:00:00.123456Z``."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def unix(seconds: float | None) -> int | None:
    """OpenAI's: whole seconds."""
    return None if seconds is None else int(seconds)
