"""``encrypted_content``: a reasoning item's text sealed under the node's key.

The seal is the text (base64url) and the node's thinking signature of it (``Signer``),
so it is opaque to clients, and verified when it comes back: a seal that is not ours or
whose text was edited is refused. It is signed, not encrypted; the same text is in the
item's ``content``.
"""

from __future__ import annotations

import base64
import binascii

from ...core import ThinkingPart
from ...errors import InvalidRequest
from ...node.signatures import Signer

_PREFIX = "b3os1."


def seal(thinking: str, signature: str) -> str:
    text = base64.urlsafe_b64encode(thinking.encode("utf-8")).decode().rstrip("=")
    return f"{_PREFIX}{text}.{signature}"


def _text(encoded: str) -> str | None:
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def unseal(sealed: str, signer: Signer, path: str) -> ThinkingPart:
    """The reasoning a seal carries, or the refusal of a seal that does not verify."""
    body = sealed.removeprefix(_PREFIX) if sealed.startswith(_PREFIX) else ""
    encoded, _, signature = body.partition(".")
    text = _text(encoded)
    if text is None or not signature or not signer.verify(text, signature):
        raise InvalidRequest(f"{path}: the encrypted content could not be verified: it was "
                             "not made by this server, or it was changed",
                             code="invalid_encrypted_content", param=path)
    return ThinkingPart(text, signature)
