"""Thinking signatures: an opaque MAC of the reasoning text under the node's secret.

Layout before base64url: version (1 byte), flags (1 byte: 1 = text omitted from the
reply), SHA-256 of the text (32 bytes), HMAC-SHA256 of the first 34 bytes (32 bytes).
A block sent back verifies when the MAC is ours and the text hashes to the digest; an
omitted block may come back with empty text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

_VERSION = 1
_OMITTED = 1


class Signer:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def sign(self, thinking: str, *, omitted: bool = False) -> str:
        body = bytes([_VERSION, _OMITTED if omitted else 0]) + _digest(thinking)
        mac = hmac.new(self._secret, body, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(body + mac).decode().rstrip("=")

    def verify(self, thinking: str, signature: str) -> bool:
        try:
            raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        except (binascii.Error, ValueError):
            return False
        if len(raw) != 66 or raw[0] != _VERSION:
            return False
        body, mac = raw[:34], raw[34:]
        if not hmac.compare_digest(mac, hmac.new(self._secret, body,
                                                 hashlib.sha256).digest()):
            return False
        if raw[1] == _OMITTED and thinking == "":
            return True
        return hmac.compare_digest(body[2:], _digest(thinking))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
