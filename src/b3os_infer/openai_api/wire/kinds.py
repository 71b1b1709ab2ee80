"""The kind tables of the OpenAI wire's tagged unions: which ``type`` (or ``role``) of a
message, content part, tool, tool call, tool choice or response format is served."""

from __future__ import annotations

from ...wire_models import kinds

TEXT_ONLY = "the served models read text only"

MESSAGE_ROLES = kinds(
    "message",
    ("system", "supported", "instructions; only at the start of `messages`"),
    ("developer", "supported", "the newer name of `system`, served the same way"),
    ("user", "supported", "text content"),
    ("assistant", "supported", "earlier replies: text, tool calls and reasoning"),
    ("tool", "supported", "the result of a tool call, answering the assistant's call"),
    ("function", "refused", "deprecated: use `tool` messages"),
    key="role", at="role")

CONTENT_PARTS = kinds(
    "content part",
    ("text", "supported", "in every role"),
    ("refusal", "ignored", "assistant messages: not shown to the model"),
    ("image_url", "refused", TEXT_ONLY),
    ("input_audio", "refused", TEXT_ONLY),
    ("file", "refused", TEXT_ONLY))

TOOL_TYPES = kinds(
    "tool",
    ("function", "supported", "a function the model may call; its arguments are valid "
     "against `parameters` by construction (grammar-constrained decoding)"),
    ("custom", "refused", "free-form custom tools are not served"),
    at="type")

TOOL_CALL_TYPES = kinds(
    "tool call",
    ("function", "supported", "a function call (the type may be left out)"),
    ("custom", "refused", "only `function` tool calls are served"),
    at="type")

TOOL_CHOICE_TYPES = kinds(
    "tool choice",
    ("function", "supported", "this named function must be called"),
    ("allowed_tools", "refused", "name one function or use 'required'"),
    ("custom", "refused", "free-form custom tools are not served"),
    at="type")

RESPONSE_FORMATS = kinds(
    "response format",
    ("text", "supported", "free text, the default"),
    ("json_object", "supported", "a JSON object, enforced by grammar"),
    ("json_schema", "supported", "JSON valid against `schema` (always strict here), "
     "enforced by grammar"),
    at="type")

TABLES = (MESSAGE_ROLES, CONTENT_PARTS, TOOL_TYPES, TOOL_CALL_TYPES, TOOL_CHOICE_TYPES,
          RESPONSE_FORMATS)
