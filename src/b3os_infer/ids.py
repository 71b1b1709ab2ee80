"""Identifiers: request ids (ULIDs in lowercase Crockford base32) and object ids."""

from __future__ import annotations

import os
import secrets
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
    return "".join(secrets.choice(_BASE62) for _ in range(length))


def message_id() -> str:
    return "msg_" + base62(24)


def tool_use_id() -> str:
    return "toolu_" + base62(24)


def completion_id() -> str:
    return "chatcmpl-" + base62(24)


def text_completion_id() -> str:
    return "cmpl-" + base62(24)
