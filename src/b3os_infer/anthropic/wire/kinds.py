"""The kinds of the Messages API's tagged unions: content-block types and tool types.

The request models pick a union member by these tables (``KindTable.discriminator``), so a
kind the table refuses, or one it does not know, is refused naming the member's path.
"""

from __future__ import annotations

from ...wire_models import kinds

_SERVER_TOOL = "no server-side tools"
_DEFINED_TOOL = "Anthropic-defined tool: declare it as a custom tool instead"

CONTENT_BLOCKS = kinds(
    "content block",
    ("text", "supported", "must be non-empty; `cache_control` ignored; `citations` refused"),
    ("tool_use", "supported", "assistant turns; must be answered by `tool_result`; `caller` "
     "accepted (every call here is direct)"),
    ("tool_result", "supported", "user turns; string or text-block content, `is_error`"),
    ("thinking", "supported", "assistant turns; the signature is verified, then the text is "
     "rendered back the way the template expects"),
    ("redacted_thinking", "supported", "accepted; its data is opaque, so nothing of it is "
     "rendered into the prompt"),
    ("tool_reference", "supported", "in `tool_result.content` (what a tool search, such as "
     "Claude Code's ToolSearch, answers): loads the deferred tool it names, whose definition "
     "is rendered there, after the cached prefix, and which can be called from then on"),
    ("tool_addition", "supported", "user turns (beta `mid-conversation-tool-changes`): the "
     "tool it names or defines is offered from there on, its definition rendered there, "
     "not in the tool list at the top, so the prompt before it stays cached"),
    ("tool_removal", "supported", "user turns: the tool it names can no longer be called "
     "from there on; the model reads that there, the tool list at the top stays as it was"),
    ("image", "refused", "the served models read text only"),
    ("document", "refused", "the served models read text only"),
    ("search_result", "refused", "citations are not produced"),
    ("container_upload", "refused", "no code-execution containers"),
    ("server_tool_use", "supported", "assistant turns: a web search or fetch this server "
     "ran; rendered back as the call, followed by its result"),
    ("web_search_tool_result", "supported", "assistant turns, after its `server_tool_use`: "
     "rendered back as the model read it"),
    ("web_fetch_tool_result", "supported", "assistant turns, after its `server_tool_use`: "
     "the page's text rendered back"),
    ("code_execution_tool_result", "refused", _SERVER_TOOL),
    ("bash_code_execution_tool_result", "refused", _SERVER_TOOL),
    ("text_editor_code_execution_tool_result", "refused", _SERVER_TOOL),
    ("tool_search_tool_result", "refused", _SERVER_TOOL),
    ("mcp_tool_use", "refused", "no server-side MCP connections"),
    ("mcp_tool_result", "refused", "no server-side MCP connections"),
    ("mid_conv_system", "refused", "instructions go in the top-level `system`"),
    ("compaction", "refused", "no server-side compaction"),
)

TOOL_TYPES = kinds(
    "tool",
    ("custom", "supported", "executed by the client, declared with `input_schema`"),
    ("bash_*", "refused", _DEFINED_TOOL),
    ("text_editor_*", "refused", _DEFINED_TOOL),
    ("memory_*", "refused", _DEFINED_TOOL),
    ("computer_*", "refused", _DEFINED_TOOL),
    ("web_search_*", "supported", "run on this server through the operator's search "
     "backend (docs/server-tools.md); without one, each search's result is an "
     "`unavailable` error the model reads"),
    ("web_fetch_*", "supported", "run on this server when the operator enabled it: public "
     "http(s) addresses only (docs/server-tools.md)"),
    ("code_execution_*", "refused", "server-side tool"),
    ("tool_search_tool_*", "refused", "server-side tool"),
    ("mcp_toolset", "refused", "server-side MCP connection"),
)

TOOL_CHANGES = kinds(
    "tool change target",
    ("tool_reference", "supported", "a tool of `tools[]` by `name` (a deferred one, "
     "typically)"),
    ("tool_definition", "supported", "a custom tool by value, in `definition`"),
    ("mcp_tool_reference", "refused", "no server-side MCP connections"),
    ("mcp_toolset_reference", "refused", "no server-side MCP connections"),
)

CONTEXT_EDITS = kinds(
    "context edit",
    ("clear_tool_uses_20250919", "supported", "old tool results replaced by a placeholder "
     "once the prompt passes `trigger`; see \"Context editing\""),
    ("clear_thinking_20251015", "supported", "thinking of earlier assistant turns removed; "
     "see \"Context editing\""),
    ("compact_20260112", "refused", "no server-side compaction: the conversation would not "
     "be summarised as the caller expects"),
)

TABLES = (CONTENT_BLOCKS, TOOL_TYPES, TOOL_CHANGES, CONTEXT_EDITS)
