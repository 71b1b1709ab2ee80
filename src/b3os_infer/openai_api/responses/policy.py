"""The field policy of ``POST /v1/infer/responses``, read off its wire models and kind
tables: every request field, item field, content part, tool and tool choice in exactly
one list (supported, accepted and ignored, refused). ``docs/responses.md`` is rendered
from this module (``python -m b3os_infer.openai_api.responses.policy``) and a test keeps
them equal."""

from __future__ import annotations

from ...node.output_cap import OutputCapRule
from ...wire_models import Rule, kind_rules, policy_rules, render_tables
from ..wire import response_kinds as kinds
from ..wire.response_create import (
    Reasoning,
    ResponseCreateParams,
    ResponseFormatTextJSONSchemaConfig,
    ResponseTextConfigParam,
)
from ..wire.response_items import (
    EasyInputMessageParam,
    FunctionCallOutput,
    ResponseCustomToolCallOutputParam,
    ResponseCustomToolCallParam,
    ResponseFunctionToolCallParam,
    ResponseReasoningItemParam,
)
from ..wire.response_tools import (
    CustomToolParam,
    FunctionToolParam,
    NamespaceToolParam,
    ToolChoiceAllowedParam,
)

FIELDS = policy_rules(ResponseCreateParams)

# how much a reply may write where the request does not say (node/output_cap.py)
OUTPUT_CAP = OutputCapRule("max_output_tokens")

TABLES: tuple[tuple[str, tuple[Rule, ...]], ...] = (
    ("Request fields of `POST /v1/infer/responses`", FIELDS),
    ("`reasoning`", policy_rules(Reasoning)),
    ("`text`", policy_rules(ResponseTextConfigParam)),
    ("Types of `text.format`", kind_rules(kinds.TEXT_FORMATS)),
    ("Fields of a `json_schema` format", policy_rules(ResponseFormatTextJSONSchemaConfig)),
    ("Item types in `input[]`", kind_rules(kinds.INPUT_ITEMS)),
    ("Fields of a `message` item", policy_rules(EasyInputMessageParam)),
    ("Content parts of a message", kind_rules(kinds.INPUT_CONTENT)),
    ("Fields of a `function_call` item", policy_rules(ResponseFunctionToolCallParam)),
    ("Fields of a `function_call_output` item", policy_rules(FunctionCallOutput)),
    ("Fields of a `custom_tool_call` item", policy_rules(ResponseCustomToolCallParam)),
    ("Fields of a `custom_tool_call_output` item",
     policy_rules(ResponseCustomToolCallOutputParam)),
    ("Fields of a `reasoning` item", policy_rules(ResponseReasoningItemParam)),
    ("Tool types in `tools[]`", kind_rules(kinds.RESPONSE_TOOLS)),
    ("Fields of a `function` tool", policy_rules(FunctionToolParam)),
    ("Fields of a `custom` tool", policy_rules(CustomToolParam)),
    ("Formats of a `custom` tool", kind_rules(kinds.CUSTOM_FORMATS)),
    ("Fields of a `namespace` tool", policy_rules(NamespaceToolParam)),
    ("Tool types in a namespace", kind_rules(kinds.NAMESPACE_TOOLS)),
    ("Types of an object `tool_choice`", kind_rules(kinds.TOOL_CHOICES)),
    ("Fields of an `allowed_tools` tool choice", policy_rules(ToolChoiceAllowedParam)),
)


def render_markdown() -> str:
    """The tables as they appear in docs/responses.md."""
    return render_tables(TABLES)


if __name__ == "__main__":
    print(render_markdown())
