"""The kind tables of the Responses API's tagged unions: input items, their content
parts, tools and tool choices, and ``text.format``."""

from __future__ import annotations

from ...wire_models import kinds
from .kinds import TEXT_ONLY

NOT_STORED = "items are not looked up by id: send the items themselves, or continue with " \
    "`previous_response_id`"
HOSTED = "a tool that runs on OpenAI's servers; it cannot run here"

INPUT_ITEMS = kinds(
    "input item",
    ("message", "supported", "roles user, system, developer, assistant; `type` may be "
     "left out"),
    ("function_call", "supported", "an earlier call of a function tool"),
    ("function_call_output", "supported", "the result of a function call, by `call_id`"),
    ("custom_tool_call", "supported", "an earlier call of a custom tool"),
    ("custom_tool_call_output", "supported", "the result of a custom tool call"),
    ("reasoning", "supported", "earlier reasoning: `encrypted_content` (verified) or its "
     "text"),
    ("item_reference", "refused", NOT_STORED),
    ("web_search_call", "supported", "a search this server ran: rendered back as the "
     "call and the addresses it found"),
    ("file_search_call", "refused", HOSTED),
    ("computer_call", "refused", HOSTED),
    ("computer_call_output", "refused", HOSTED),
    ("code_interpreter_call", "refused", HOSTED),
    ("image_generation_call", "refused", HOSTED),
    ("local_shell_call", "refused", "use a function tool"),
    ("local_shell_call_output", "refused", "use a function tool"),
    ("mcp_*", "refused", "remote MCP servers are not called from here"),
    ("compaction", "refused", "compaction is not served"),
    at="type")

INPUT_CONTENT = kinds(
    "content part",
    ("input_text", "supported", "text, in every role"),
    ("output_text", "supported", "an earlier reply's text"),
    ("refusal", "ignored", "an earlier refusal: not shown to the model"),
    ("input_image", "refused", TEXT_ONLY),
    ("input_file", "refused", TEXT_ONLY),
    ("input_audio", "refused", TEXT_ONLY),
    at="type")

RESPONSE_TOOLS = kinds(
    "tool",
    ("function", "supported", "a function the model may call; arguments valid against "
     "`parameters` by construction where the engine applies grammars"),
    ("custom", "supported", "free-form text input (the model writes it as one string); "
     "its `format` grammar is not enforced"),
    ("namespace", "supported", "its tools are offered as `<namespace>.<name>`; calls come "
     "back with `namespace` set"),
    ("web_search*", "supported", "run on this server through the operator's search "
     "backend (docs/server-tools.md); where none is configured, or "
     "the key lacks the `server_tools` scope, accepted and left out of the prompt (Codex "
     "sends it by default)"),
    ("file_search", "refused", HOSTED),
    ("code_interpreter", "refused", HOSTED),
    ("computer_use_preview", "refused", HOSTED),
    ("computer", "refused", HOSTED),
    ("image_generation", "refused", HOSTED),
    ("mcp", "refused", "remote MCP servers are not called from here"),
    ("local_shell", "refused", "use a function tool"),
    ("shell", "refused", "use a function tool"),
    ("apply_patch", "refused", "use a custom tool"),
    ("tool_search", "refused", "tool search is not served"),
    at="type")

NAMESPACE_TOOLS = kinds(
    "namespace tool",
    ("function", "supported", "a function, offered as `<namespace>.<name>`"),
    ("custom", "supported", "a custom tool, offered as `<namespace>.<name>`"),
    at="type")

TOOL_CHOICES = kinds(
    "tool choice",
    ("function", "supported", "this function must be called"),
    ("custom", "supported", "this custom tool must be called"),
    ("allowed_tools", "supported", "only the listed tools are offered to the model"),
    ("web_search*", "refused", HOSTED),
    ("file_search", "refused", HOSTED),
    ("mcp", "refused", "remote MCP servers are not called from here"),
    at="type")

TEXT_FORMATS = kinds(
    "text format",
    ("text", "supported", "free text, the default"),
    ("json_object", "supported", "a JSON object, enforced by grammar"),
    ("json_schema", "supported", "JSON valid against `schema` (always strict here), "
     "enforced by grammar"),
    at="type")

CUSTOM_FORMATS = kinds(
    "custom tool format",
    ("text", "supported", "unconstrained text, the default"),
    ("grammar", "supported", "accepted; the grammar (lark or regex) is not enforced here: "
     "the input is unconstrained text"),
    at="type")

TABLES = (INPUT_ITEMS, INPUT_CONTENT, RESPONSE_TOOLS, NAMESPACE_TOOLS, TOOL_CHOICES,
          TEXT_FORMATS, CUSTOM_FORMATS)
