"""The field policy of /v1/messages and /v1/messages/count_tokens: one declarative table.

Every request field, content-block type and tool type is in exactly one list:
supported (honoured as the real API does), ignored (accepted; it only steers the vendor's
infrastructure or cannot change the answer here) or refused (400 ``unsupported_parameter``
naming the field: silently dropping it would change the result the caller relies on).
Anything not in the table is refused the same way. ``docs/anthropic.md`` is rendered
from this module (``python -m b3os_infer.anthropic.policy``) and a test keeps them equal.
"""

from __future__ import annotations

from ..policy import Rule, names, render_tables, rule, rules

MESSAGES_FIELDS = rules(
    ("model", "supported", "required; a model this node serves, never mapped to another"),
    ("max_tokens", "supported", "required; at most the model's output limit"),
    ("messages", "supported", "required; consecutive turns of one role are combined"),
    ("system", "supported", "string or text blocks; Claude Code's per-request "
     "`x-anthropic-billing-header` block is dropped so the prompt prefix stays cacheable"),
    ("stream", "supported", "server-sent events, `event:` line on every frame"),
    ("stop_sequences", "supported", "also across token boundaries and in streams"),
    ("temperature", "supported", "0 to 1; only 1 with thinking, as the real API"),
    ("top_p", "supported", "0 to 1"),
    ("top_k", "supported", ">= 0"),
    ("tools", "supported", "custom tools; inputs valid against `input_schema` by "
     "construction (grammar-constrained decoding)"),
    ("tool_choice", "supported", "auto, any, tool, none; `disable_parallel_tool_use`"),
    ("thinking", "supported", "enabled (budget honoured), adaptive, disabled; `display`"),
    ("output_config", "supported", "`effort` sets the adaptive thinking budget; "
     "`format` (json_schema) is enforced by grammar"),
    ("output_format", "supported", "the deprecated beta spelling of `output_config.format`"),
    ("metadata", "ignored", "an opaque user id; nothing here is billed per user"),
    ("service_tier", "ignored", "one tier here"),
    ("inference_geo", "ignored", "one place here"),
    ("cache_control", "ignored", "the prefix cache is automatic; reuse is reported in "
     "`usage.cache_read_input_tokens`"),
    ("context_management", "ignored", "no server-side edits of the context are made"),
    ("speed", "ignored", "one speed here"),
    ("diagnostics", "ignored", "cache diagnostics are not reported"),
    ("fallback_credit_token", "ignored", "no fallbacks happen here"),
    ("container", "refused", "no code-execution containers"),
    ("mcp_servers", "refused", "no server-side MCP connections"),
    ("fallbacks", "refused", "no name is ever mapped to another model"),
)

COUNT_TOKENS_FIELDS = rules(
    ("model", "supported", "required"),
    ("messages", "supported", "required; counted with the model's own chat template"),
    ("system", "supported", "as on /v1/messages"),
    ("tools", "supported", "the tool prompt is counted"),
    ("tool_choice", "supported", "`none` leaves the tools out, as generation does"),
    ("thinking", "supported", "an opened reasoning section is counted"),
    ("output_config", "supported", "as on /v1/messages"),
    ("output_format", "supported", "as on /v1/messages"),
    ("cache_control", "ignored", "as on /v1/messages"),
    ("context_management", "ignored", "as on /v1/messages"),
    ("speed", "ignored", "as on /v1/messages"),
    ("mcp_servers", "refused", "as on /v1/messages"),
)

CONTENT_BLOCKS = rules(
    ("text", "supported", "must be non-empty; `cache_control` ignored; `citations` refused"),
    ("tool_use", "supported", "assistant turns; must be answered by `tool_result`"),
    ("tool_result", "supported", "user turns; string or text-block content, `is_error`"),
    ("thinking", "supported", "assistant turns; the signature is verified, then the text is "
     "rendered back the way the template expects"),
    ("redacted_thinking", "supported", "accepted; its data is opaque, so nothing of it is "
     "rendered into the prompt"),
    ("image", "refused", "the served models read text only"),
    ("document", "refused", "the served models read text only"),
    ("search_result", "refused", "citations are not produced"),
    ("container_upload", "refused", "no code-execution containers"),
    ("server_tool_use", "refused", "no server-side tools"),
    ("web_search_tool_result", "refused", "no server-side tools"),
    ("web_fetch_tool_result", "refused", "no server-side tools"),
    ("code_execution_tool_result", "refused", "no server-side tools"),
    ("bash_code_execution_tool_result", "refused", "no server-side tools"),
    ("text_editor_code_execution_tool_result", "refused", "no server-side tools"),
    ("tool_search_tool_result", "refused", "no server-side tools"),
    ("mcp_tool_use", "refused", "no server-side MCP connections"),
    ("mcp_tool_result", "refused", "no server-side MCP connections"),
    ("mid_conv_system", "refused", "instructions go in the top-level `system`"),
    ("compaction", "refused", "no server-side compaction"),
)

TOOL_FIELDS = rules(
    ("name", "supported", "1-128 characters of letters, digits, `_` and `-`; unique"),
    ("input_schema", "supported", "a JSON Schema object; enforced by grammar"),
    ("description", "supported", "shown to the model"),
    ("type", "supported", "`custom` or absent"),
    ("strict", "supported", "inputs always follow the schema here"),
    ("cache_control", "ignored", "the prefix cache is automatic"),
    ("defer_loading", "ignored", "every tool is in the prompt from the start"),
    ("eager_input_streaming", "ignored", "inputs always stream as they are generated"),
    ("input_examples", "ignored", "not shown to the model"),
    ("allowed_callers", "ignored", "every call is direct"),
)

TOOL_TYPES = rules(
    ("custom", "supported", "executed by the client, declared with `input_schema`"),
    ("bash_*", "refused", "Anthropic-defined tool: declare it as a custom tool instead"),
    ("text_editor_*", "refused", "Anthropic-defined tool: declare it as a custom tool instead"),
    ("memory_*", "refused", "Anthropic-defined tool: declare it as a custom tool instead"),
    ("computer_*", "refused", "Anthropic-defined tool: declare it as a custom tool instead"),
    ("web_search_*", "refused", "server-side tool"),
    ("web_fetch_*", "refused", "server-side tool"),
    ("code_execution_*", "refused", "server-side tool"),
    ("tool_search_tool_*", "refused", "server-side tool"),
    ("mcp_toolset", "refused", "server-side MCP connection"),
)

HEADERS_AND_QUERY = rules(
    ("x-api-key", "supported", "the B3OS key"),
    ("authorization", "supported", "`Bearer <B3OS key>`"),
    ("anthropic-version", "ignored", "accepted, not required"),
    ("anthropic-beta", "ignored", "any value; features are chosen by the body fields"),
    ("?beta=true", "ignored", "the query string of the SDKs' beta calls"),
)


_TABLES = (
    ("Request fields of `POST /v1/infer/v1/messages`", MESSAGES_FIELDS),
    ("Request fields of `POST /v1/infer/v1/messages/count_tokens`", COUNT_TOKENS_FIELDS),
    ("Content blocks in `messages[].content` (and `tool_result.content`)", CONTENT_BLOCKS),
    ("Fields of a custom tool in `tools[]`", TOOL_FIELDS),
    ("Tool types", TOOL_TYPES),
    ("Headers and query", HEADERS_AND_QUERY),
)


def render_markdown() -> str:
    """The tables as they appear in docs/anthropic.md."""
    return render_tables(_TABLES)


__all__ = ["Rule", "names", "render_markdown", "rule"]

if __name__ == "__main__":
    print(render_markdown())
