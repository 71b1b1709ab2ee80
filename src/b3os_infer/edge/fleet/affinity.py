"""Which session a request belongs to, so that the edge can keep a session on one node.

An agent resends its whole conversation on every turn; the node that served the last turn
holds that prefix in its cache. The key names the session:

1. the session the client names, first in its headers: Claude Code's
   ``x-claude-code-session-id`` (its subagents send their parent's session id too; without
   it, ``x-claude-code-parent-agent-id``, then ``x-claude-code-agent-id``), Codex's
   ``session-id`` (or ``session_id``), OpenCode's ``x-parent-session-id`` (a subtask goes
   with the session that started it), then ``x-session-id``;
2. then in its body: the ``session_id`` inside Anthropic ``metadata.user_id`` (Claude Code
   writes a JSON object there, older releases ``user_..._session_<uuid>``), then the
   ``prompt_cache_key`` of a Responses or Chat Completions request (Codex sets it to its
   thread id);
3. else a fingerprint of the prompt's leading prefix: the system prompt (or
   ``instructions``), the tools and the conversation up to its first non-system message
   (or the first 2 KiB of a prompt given as one string, a completion's), each bounded in
   bytes (16 KiB) and without Claude Code's billing block (its ``cch=`` nonce changes
   every request; the node drops that block from the prompt too) nor ``cache_control``
   markers, which move from turn to turn. Later turns only append messages, so every
   turn of a conversation has the same fingerprint.

All named sessions share one namespace: Claude Code's header and the ``session_id`` in its
``metadata`` are the same id, so a request keeps its node with or without the header.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...anthropic.decode import BILLING_HEADER

KeySource = Literal["session", "prefix"]

# in order of precedence; the parent ids come before the ids of the agents they spawned
SESSION_HEADERS = ("x-claude-code-session-id", "x-claude-code-parent-agent-id",
                   "x-claude-code-agent-id", "session-id", "session_id",
                   "x-parent-session-id", "x-session-id")
# each part of the prefix that the fingerprint reads is cut at this many bytes
PREFIX_PART_BYTES = 16 * 1024
# a prompt given as one string (a completion's) grows from turn to turn: only its head counts
PROMPT_HEAD_BYTES = 2 * 1024
# a session id is read up to this many characters
_ID_CHARS = 256
_LEGACY_SESSION = re.compile(r"_session_([0-9A-Za-z-]{8,64})$")
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True)
class RoutingKey:
    source: KeySource
    value: str


def routing_key(headers: Mapping[str, str], body: Mapping[str, Any] | None) -> RoutingKey | None:
    """The session a request belongs to, or the fingerprint of its prefix; None when it
    has neither (no body, a body without a prompt, a body that is not an object)."""
    session = header_session(headers) or (body_session(body) if body is not None else None)
    if session is not None:
        return RoutingKey("session", session[:_ID_CHARS])
    fingerprint = prefix_fingerprint(body) if body is not None else None
    return RoutingKey("prefix", fingerprint) if fingerprint is not None else None


def header_session(headers: Mapping[str, str]) -> str | None:
    for name in SESSION_HEADERS:
        if value := headers.get(name, "").strip():
            return value
    return None


def body_session(body: Mapping[str, Any]) -> str | None:
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping) and (found := user_id_session(metadata.get("user_id"))):
        return found
    key = body.get("prompt_cache_key")
    return key.strip() or None if isinstance(key, str) else None


def user_id_session(user_id: object) -> str | None:
    """The ``session_id`` in Claude Code's ``metadata.user_id``: a JSON object in a string
    (``{"device_id": ..., "account_uuid": ..., "session_id": ...}``), or the older
    ``user_<hash>_account_<uuid>_session_<uuid>``."""
    if not isinstance(user_id, str):
        return None
    if user_id.startswith("{"):
        try:
            decoded = json.loads(user_id)
        except ValueError:
            return None
        session = decoded.get("session_id") if isinstance(decoded, dict) else None
        return session.strip() or None if isinstance(session, str) else None
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else None


def prefix_fingerprint(body: Mapping[str, Any]) -> str | None:
    """A digest of the prompt's leading prefix; None when the body has no prompt."""
    system = _without_billing(body.get("system", body.get("instructions")))
    conversation = _opening(body.get("messages", body.get("input", body.get("prompt"))))
    if conversation is None:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for part in (system, body.get("tools"), conversation):
        digest.update(_bounded(part))
        digest.update(b"\x00")
    return digest.hexdigest()


def _without_billing(system: object) -> object:
    """The system blocks less Claude Code's billing block, which may carry a per-request
    nonce (``cch=``); the node leaves it out of the prompt too."""
    if not isinstance(system, list):
        return system
    return [block for block in system if not (
        isinstance(block, Mapping) and str(block.get("text", "")).startswith(BILLING_HEADER))]


def _opening(conversation: object) -> object:
    """The conversation up to its first message that is not a system one; the head of a
    prompt given as one string (a completion's, or a Responses ``input``); None when
    there is none."""
    if isinstance(conversation, str):
        return conversation.encode("utf-8", "surrogatepass")[:PROMPT_HEAD_BYTES]
    if not isinstance(conversation, list) or not conversation:
        return None
    for end, item in enumerate(conversation, 1):
        if not (isinstance(item, Mapping) and item.get("role") in _SYSTEM_ROLES):
            return conversation[:end]
    return conversation


def _bounded(part: object) -> bytes:
    """The part's first ``PREFIX_PART_BYTES`` as JSON; a list is encoded item by item and
    only as far as the bound (Claude Code's tools are about 60 KB)."""
    if part is None:
        return b""
    if isinstance(part, bytes):
        return part
    if isinstance(part, str):
        return _cut(part)
    pieces, size = [], 0
    for item in part if isinstance(part, list) else [part]:
        pieces.append(json.dumps(_without_markers(item), ensure_ascii=False,
                                 separators=(",", ":")))
        size += len(pieces[-1])
        if size >= PREFIX_PART_BYTES:
            break
    return _cut("\x1e".join(pieces))


def _cut(text: str) -> bytes:
    return text[:PREFIX_PART_BYTES].encode("utf-8", "surrogatepass")[:PREFIX_PART_BYTES]


def _without_markers(value: object) -> object:
    """``value`` without its ``cache_control`` entries: clients move them every turn."""
    if isinstance(value, Mapping):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value
