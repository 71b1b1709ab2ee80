"""The field policy of /v1/messages and /v1/messages/count_tokens, read off the wire models.

Every request field, content-block type and tool type is in exactly one list:
supported (honoured as the real API does), ignored (accepted; it only steers the vendor's
infrastructure or cannot change the answer here) or refused (400 ``unsupported_parameter``
naming the field: silently dropping it would change the result the caller relies on).
Anything not in the tables is refused the same way. The field tables are the markers of
the models in ``wire/``; the kind tables are the ones their unions pick members by.
``docs/anthropic.md`` is rendered from this module (``python -m b3os_infer.anthropic.policy``)
and a test keeps them equal.
"""

from __future__ import annotations

from ..node.output_cap import OutputCapRule
from ..wire_models import Rule, kind_rules, policy_rules, render_tables
from .wire.kinds import CONTENT_BLOCKS, CONTEXT_EDITS, TOOL_CHANGES, TOOL_TYPES
from .wire.params import (
    ClearThinkingEditParam,
    ClearToolUsesEditParam,
    MessageCountTokensParams,
    MessageCreateParams,
)
from .wire.tools import ToolParam

MESSAGES_FIELDS = policy_rules(MessageCreateParams)

# `max_tokens` is required here; above what the model can write it is lowered
# (node/output_cap.py)
OUTPUT_CAP = OutputCapRule("max_tokens")
COUNT_TOKENS_FIELDS = policy_rules(MessageCountTokensParams)
TOOL_FIELDS = policy_rules(ToolParam)
CLEAR_TOOL_USES_FIELDS = policy_rules(ClearToolUsesEditParam)
CLEAR_THINKING_FIELDS = policy_rules(ClearThinkingEditParam)

HEADERS_AND_QUERY = (
    Rule("x-api-key", "supported", "the B3OS key"),
    Rule("authorization", "supported", "`Bearer <B3OS key>`"),
    Rule("anthropic-version", "ignored", "accepted, not required"),
    Rule("anthropic-beta", "ignored", "any value; features are chosen by the body fields"),
    Rule("anthropic-workspace-id", "ignored", "one workspace here: the key's"),
    Rule("anthropic-user-profile-id", "ignored", "requests are attributed to the B3OS key"),
    Rule("?beta=true", "ignored", "the query string of the SDKs' beta calls"),
)


_TABLES = (
    ("Request fields of `POST /v1/infer/v1/messages`", MESSAGES_FIELDS),
    ("Request fields of `POST /v1/infer/v1/messages/count_tokens`", COUNT_TOKENS_FIELDS),
    ("Content blocks in `messages[].content` (and `tool_result.content`)",
     kind_rules(CONTENT_BLOCKS)),
    ("Fields of a custom tool in `tools[]`", TOOL_FIELDS),
    ("Tool types", kind_rules(TOOL_TYPES)),
    ("The `tool` of `tool_addition` and `tool_removal` blocks", kind_rules(TOOL_CHANGES)),
    ("Edits in `context_management.edits[]`", kind_rules(CONTEXT_EDITS)),
    ("Fields of a `clear_tool_uses_20250919` edit", CLEAR_TOOL_USES_FIELDS),
    ("Fields of a `clear_thinking_20251015` edit", CLEAR_THINKING_FIELDS),
    ("Headers and query", HEADERS_AND_QUERY),
)


def render_markdown() -> str:
    """The tables as they appear in docs/anthropic.md."""
    return render_tables(_TABLES)


__all__ = ["CLEAR_THINKING_FIELDS", "CLEAR_TOOL_USES_FIELDS", "CONTENT_BLOCKS", "CONTEXT_EDITS",
           "COUNT_TOKENS_FIELDS", "HEADERS_AND_QUERY", "MESSAGES_FIELDS", "OUTPUT_CAP",
           "TOOL_CHANGES", "TOOL_FIELDS", "TOOL_TYPES", "render_markdown"]

if __name__ == "__main__":
    print(render_markdown())
