"""The kinds of the Messages API's tagged unions: content-block types and tool types.

The request models pick a union member by these tables (``KindTable.discriminator``), so a
kind the table refuses, or one it does not know, is refused naming the member's path.
"""

from __future__ import annotations

from ...wire import kinds

_SERVER_TOOL = "no server-side tools"
_DEFINED_TOOL = "Anthropic-defined tool: declare it as a custom tool instead"

CONTENT_BLOCKS = kinds(
    "content block",
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
    ("server_tool_use", "refused", _SERVER_TOOL),
    ("web_search_tool_result", "refused", _SERVER_TOOL),
    ("web_fetch_tool_result", "refused", _SERVER_TOOL),
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
    ("web_search_*", "refused", "server-side tool"),
    ("web_fetch_*", "refused", "server-side tool"),
    ("code_execution_*", "refused", "server-side tool"),
    ("tool_search_tool_*", "refused", "server-side tool"),
    ("mcp_toolset", "refused", "server-side MCP connection"),
)

TABLES = (CONTENT_BLOCKS, TOOL_TYPES)
