"""Identifiers: request ids (ULIDs in lowercase Crockford base32) and object ids."""

from __future__ import annotations

import os
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def ulid(now_ms: int | None = None) -> str:
    """A 26-character ULID: 48 bits of milliseconds, 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def request_id() -> str:
    return "req_" + ulid()


def base62(length: int) -> str:
    """``length`` random base-62 characters, from one read of the system's randomness
    (8 bytes beyond what they need, so no character is measurably likelier than another)."""
    value = int.from_bytes(os.urandom(length * 6 // 8 + 8), "big")
    chars = []
    for _ in range(length):
        value, index = divmod(value, 62)
        chars.append(_BASE62[index])
    return "".join(chars)


def message_id() -> str:
    return "msg_" + base62(24)


def call_id() -> str:
    """A new tool call's id, neutral: each wire format adds its own prefix."""
    return base62(24)


def completion_id() -> str:
    return "chatcmpl-" + base62(24)


def text_completion_id() -> str:
    return "cmpl-" + base62(24)
