"""The field policy of the OpenAI routes (/chat/completions, /completions, /embeddings),
read off the wire models.

Every request field, message field, content-part type and tool type is in exactly one
list: supported, accepted and ignored, or refused (400 ``unsupported_parameter`` naming
the field as a path). The rows are the models' own policy markers (``wire/``) and kind
tables, so a documented field is one the decoder reads; anything not in a table is
refused. ``docs/openai.md`` is rendered from this module
(``python -m b3os_infer.openai_api.policy``) and a test keeps them equal.
"""

from __future__ import annotations

from ..node.output_cap import OutputCapRule
from ..wire_models import Rule, Status, kind_rules, policy_rules, render_tables
from .wire import kinds
from .wire.chat import ChatCompletionCreateParams, JSONSchema
from .wire.common import ChatCompletionStreamOptionsParam
from .wire.completions import CompletionCreateParams
from .wire.content import ChatCompletionContentPartTextParam
from .wire.embeddings import EmbeddingCreateParams
from .wire.messages import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionDeveloperMessageParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from .wire.tools import ChatCompletionMessageFunctionToolCallParam, FunctionDefinition

CHAT_FIELDS = policy_rules(ChatCompletionCreateParams)

# how much a reply may write where the request does not say (node/output_cap.py)
CHAT_OUTPUT_CAP = OutputCapRule("max_completion_tokens")
COMPLETIONS_OUTPUT_CAP = OutputCapRule("max_tokens", default=16)   # OpenAI's own default
COMPLETIONS_FIELDS = policy_rules(CompletionCreateParams)
EMBEDDINGS_FIELDS = policy_rules(EmbeddingCreateParams)
MESSAGE_ROLES = kind_rules(kinds.MESSAGE_ROLES)
MESSAGE_FIELDS = {
    "system": policy_rules(ChatCompletionSystemMessageParam),
    "developer": policy_rules(ChatCompletionDeveloperMessageParam),
    "user": policy_rules(ChatCompletionUserMessageParam),
    "assistant": policy_rules(ChatCompletionAssistantMessageParam),
    "tool": policy_rules(ChatCompletionToolMessageParam),
}
CONTENT_PARTS = kind_rules(kinds.CONTENT_PARTS)
TEXT_PART_FIELDS = policy_rules(ChatCompletionContentPartTextParam)
TOOL_CALL_TYPES = kind_rules(kinds.TOOL_CALL_TYPES)
TOOL_CALL_FIELDS = policy_rules(ChatCompletionMessageFunctionToolCallParam)
TOOL_TYPES = kind_rules(kinds.TOOL_TYPES)
FUNCTION_FIELDS = policy_rules(FunctionDefinition)
TOOL_CHOICE_TYPES = kind_rules(kinds.TOOL_CHOICE_TYPES)
RESPONSE_FORMATS = kind_rules(kinds.RESPONSE_FORMATS)
JSON_SCHEMA_FIELDS = policy_rules(JSONSchema)
STREAM_OPTIONS = policy_rules(ChatCompletionStreamOptionsParam)

HEADERS = (
    Rule("authorization", "supported", "`Bearer <B3OS key>`"),
    Rule("x-api-key", "supported", "the B3OS key, as on the Anthropic routes"),
    Rule("openai-organization", "ignored", "one organisation here"),
    Rule("openai-project", "ignored", "one project here"),
    Rule("x-stainless-*", "ignored", "the SDKs' telemetry headers"),
)

TABLES: tuple[tuple[str, tuple[Rule, ...]], ...] = (
    ("Request fields of `POST /v1/infer/chat/completions`", CHAT_FIELDS),
    ("Request fields of `POST /v1/infer/completions`", COMPLETIONS_FIELDS),
    ("Request fields of `POST /v1/infer/embeddings`", EMBEDDINGS_FIELDS),
    ("`stream_options` (both routes)", STREAM_OPTIONS),
    ("Message roles in `messages[].role`", MESSAGE_ROLES),
    *((f"Fields of a `{role}` message", rules) for role, rules in MESSAGE_FIELDS.items()),
    ("Content parts in `messages[].content`", CONTENT_PARTS),
    ("Fields of a `text` content part", TEXT_PART_FIELDS),
    ("Tool call types in `messages[].tool_calls`", TOOL_CALL_TYPES),
    ("Fields of a tool call in `messages[].tool_calls`", TOOL_CALL_FIELDS),
    ("Tool types in `tools[]`", TOOL_TYPES),
    ("Fields of `tools[].function`", FUNCTION_FIELDS),
    ("Types of an object `tool_choice`", TOOL_CHOICE_TYPES),
    ("Types of `response_format`", RESPONSE_FORMATS),
    ("Fields of `response_format.json_schema`", JSON_SCHEMA_FIELDS),
    ("Headers", HEADERS),
)


def names(table: tuple[Rule, ...], status: Status) -> tuple[str, ...]:
    return tuple(r.name for r in table if r.status == status)


def render_markdown() -> str:
    """The tables as they appear in docs/openai.md."""
    return render_tables(TABLES)


__all__ = ["CHAT_OUTPUT_CAP", "COMPLETIONS_OUTPUT_CAP", "Rule", "names", "render_markdown"]

if __name__ == "__main__":
    print(render_markdown())
