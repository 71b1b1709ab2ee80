"""The request bodies of /v1/messages and /v1/messages/count_tokens, and their configs.

Shaped after the SDK's ``MessageCreateParams`` and ``MessageCountTokensParams``; each field
says whether it is supported, ignored or refused, and ``policy.py`` renders the tables in
the docs from these markers. Fields the installed SDK no longer lists (``temperature``,
``top_p``, ``top_k``) and the beta ones Claude Code sends are declared here too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel, member
from .content import MessageParam, SystemParam
from .kinds import CONTEXT_EDITS
from .tools import ToolChoiceParam, ToolUnionParam

Display = Literal["summarized", "omitted", "updates"]
Effort = Literal["low", "medium", "high", "xhigh", "max"]


_DISPLAY = Supported(
    "`summarized` (the default) sends the reasoning as written; `omitted` sends empty "
    "`thinking` text and the signature only; `updates` (beta `thinking-display-updates`) "
    "is `omitted` plus the progress notes a model writes between tool calls as text, which "
    "the models here write as ordinary text, so it sends what `omitted` sends")


class ThinkingConfigEnabledParam(WireModel):
    type: Annotated[Literal["enabled"], Supported("reasoning with a budget")]
    budget_tokens: Annotated[int, Supported("at least 1024, less than `max_tokens`"),
                             Field(ge=1024)]
    display: Annotated[Display | None, _DISPLAY] = None


class ThinkingConfigAdaptiveParam(WireModel):
    type: Annotated[Literal["adaptive"], Supported("the budget follows `output_config.effort`")]
    display: Annotated[Display | None, _DISPLAY] = None


class ThinkingConfigDisabledParam(WireModel):
    type: Annotated[Literal["disabled"], Supported("no reasoning")]


ThinkingConfigParam = Annotated[ThinkingConfigEnabledParam | ThinkingConfigAdaptiveParam
                                | ThinkingConfigDisabledParam, Field(discriminator="type")]


class JSONOutputFormatParam(WireModel):
    type: Annotated[Literal["json_schema"], Supported("the one format")]
    schema_: Annotated[dict[str, JsonValue], Supported("enforced by grammar"),
                       Field(alias="schema")]


class OutputConfigParam(WireModel):
    effort: Annotated[Effort | None, Supported("sets the adaptive thinking budget")] = None
    format: Annotated[JSONOutputFormatParam | None, Supported("enforced by grammar")] = None
    task_budget: Annotated[JsonValue, Ignored("the beta task budget; `max_tokens` bounds "
                                              "the reply")] = None


_SAME = "as on /v1/messages"
_UNCOUNTED = "changes what is generated, not what the prompt counts"


class DiagnosticsParam(WireModel):
    previous_message_id: Annotated[str | None, Supported(
        "the `id` of this client's previous reply; null on a conversation's first turn")] = None


# ---- context_management (beta `context-management-2025-06-27`) -------------------------


class InputTokensParam(WireModel):
    type: Annotated[Literal["input_tokens"], Supported("prompt tokens, counted with the "
                                                       "model's own tokenizer")]
    value: Annotated[int, Supported(">= 1"), Field(ge=1)]


class ToolUsesParam(WireModel):
    type: Annotated[Literal["tool_uses"], Supported("tool uses in the conversation")]
    value: Annotated[int, Supported(">= 0"), Field(ge=0)]


class ThinkingTurnsParam(WireModel):
    type: Annotated[Literal["thinking_turns"], Supported("assistant turns with thinking")]
    value: Annotated[int, Supported(">= 0"), Field(ge=0)]


class AllThinkingTurnsParam(WireModel):
    type: Annotated[Literal["all"], Supported("every turn's thinking is kept")]


TriggerParam = Annotated[InputTokensParam | ToolUsesParam, Field(discriminator="type")]


def _all_as_object(value: object) -> object:
    """``"all"`` is short for ``{"type": "all"}``."""
    return {"type": "all"} if value == "all" else value


ThinkingKeepParam = Annotated[ThinkingTurnsParam | AllThinkingTurnsParam,
                              Field(discriminator="type"), BeforeValidator(_all_as_object)]


class ClearToolUsesEditParam(WireModel):
    type: Annotated[Literal["clear_tool_uses_20250919"], Supported("the kind")]
    trigger: Annotated[TriggerParam | None, Supported(
        "the edit runs once the prompt has more than `value` input tokens (default "
        "100,000) or tool uses")] = None
    keep: Annotated[ToolUsesParam | None, Supported(
        "the most recent `value` tool uses keep their results (default 3)")] = None
    clear_at_least: Annotated[InputTokensParam | None, Supported(
        "nothing is cleared unless clearing frees at least `value` prompt tokens")] = None
    exclude_tools: Annotated[list[str] | None, Supported(
        "the uses of these tools are never cleared")] = None
    clear_tool_inputs: Annotated[bool | list[str] | None, Supported(
        "`true`: the cleared uses' inputs become `{}` too; a list: only those of the tools "
        "named")] = None


class ClearThinkingEditParam(WireModel):
    type: Annotated[Literal["clear_thinking_20251015"], Supported("the kind")]
    keep: Annotated[ThinkingKeepParam | None, Supported(
        "`{\"type\": \"thinking_turns\", \"value\": N}` (default 1): the thinking of the N "
        "most recent assistant turns that have some is kept, the rest removed; `\"all\"` "
        "(or `{\"type\": \"all\"}`) keeps it all")] = None


ContextEditParam = Annotated[
    Annotated[ClearToolUsesEditParam, member("clear_tool_uses_20250919")]
    | Annotated[ClearThinkingEditParam, member("clear_thinking_20251015")],
    CONTEXT_EDITS.discriminator()]


class ContextManagementParam(WireModel):
    edits: Annotated[list[ContextEditParam] | None, Supported(
        "applied in order, before the prompt is rendered")] = None


class MessageCreateParams(WireModel):
    model: Annotated[str, Supported("required; a model this node serves, never mapped to "
                                    "another")]
    max_tokens: Annotated[int, Supported(
        "required; above the model's output limit (`max_tokens` in `GET /v1/models`) it is "
        "lowered to that limit, as the OpenAI routes do; the reply then stops with "
        "`max_tokens`, or `model_context_window_exceeded` where the window is full"),
        Field(ge=1)]
    messages: Annotated[list[MessageParam], Supported("required; consecutive turns of one "
                                                      "role are combined")]
    system: Annotated[SystemParam | None, Supported(
        "string or text blocks; Claude Code's per-request `x-anthropic-billing-header` "
        "block is dropped so the prompt prefix stays cacheable")] = None
    stream: Annotated[bool | None, Supported("server-sent events, `event:` line on every "
                                             "frame")] = None
    stop_sequences: Annotated[list[Annotated[str, Field(min_length=1)]] | None,
                              Supported("also across token boundaries and in streams")] = None
    temperature: Annotated[float | None, Supported("0 to 1; only 1 with thinking, as the "
                                                   "real API"), Field(ge=0.0, le=1.0)] = None
    top_p: Annotated[float | None, Supported("0 to 1"), Field(ge=0.0, le=1.0)] = None
    top_k: Annotated[int | None, Supported(">= 0"), Field(ge=0)] = None
    tools: Annotated[list[ToolUnionParam] | None, Supported(
        "custom tools; inputs valid against `input_schema` by construction "
        "(grammar-constrained decoding)")] = None
    tool_choice: Annotated[ToolChoiceParam | None, Supported(
        "auto, any, tool, none; `disable_parallel_tool_use`")] = None
    thinking: Annotated[ThinkingConfigParam | None, Supported(
        "enabled (budget honoured), adaptive, disabled; `display`: `summarized`, `omitted` "
        "(the signature only), `updates` (beta; the real API adds its models' progress notes "
        "as text, which the models here write as ordinary text: sent as `omitted`)")] = None
    output_config: Annotated[OutputConfigParam | None, Supported(
        "`effort` sets the adaptive thinking budget; `format` (json_schema) is enforced by "
        "grammar")] = None
    output_format: Annotated[JSONOutputFormatParam | None, Supported(
        "the deprecated beta spelling of `output_config.format`")] = None
    metadata: Annotated[JsonValue, Ignored("an opaque user id; nothing here is billed per "
                                           "user")] = None
    service_tier: Annotated[JsonValue, Ignored("one tier here")] = None
    inference_geo: Annotated[JsonValue, Ignored("one place here")] = None
    cache_control: Annotated[JsonValue, Ignored(
        "the prefix cache is automatic; reuse is reported in "
        "`usage.cache_read_input_tokens`")] = None
    context_management: Annotated[ContextManagementParam | None, Supported(
        "`clear_tool_uses_20250919` and `clear_thinking_20251015`, made on the node before "
        "the prompt is rendered; the reply's `context_management.applied_edits` says what "
        "they cleared (see \"Context editing\")")] = None
    speed: Annotated[JsonValue, Ignored("one speed here")] = None
    diagnostics: Annotated[DiagnosticsParam | None, Supported(
        "`previous_message_id`: the response's `diagnostics.cache_miss_reason` says why this "
        "prompt did not reuse that reply's cached prefix, from our own prefix cache")] = None
    fallback_credit_token: Annotated[JsonValue, Ignored("no fallbacks happen here")] = None
    container: Annotated[JsonValue, Refused("no code-execution containers")] = None
    mcp_servers: Annotated[JsonValue, Refused("no server-side MCP connections")] = None
    fallbacks: Annotated[JsonValue, Refused("no name is ever mapped to another model")] = None


class MessageCountTokensParams(WireModel):
    model: Annotated[str, Supported("required")]
    messages: Annotated[list[MessageParam], Supported("required; counted with the model's "
                                                      "own chat template")]
    system: Annotated[SystemParam | None, Supported(_SAME)] = None
    tools: Annotated[list[ToolUnionParam] | None, Supported("the tool prompt is counted")] \
        = None
    tool_choice: Annotated[ToolChoiceParam | None, Supported(
        "`none` leaves the tools out, as generation does")] = None
    thinking: Annotated[ThinkingConfigParam | None, Supported(
        "an opened reasoning section is counted")] = None
    output_config: Annotated[OutputConfigParam | None, Supported(_SAME)] = None
    output_format: Annotated[JSONOutputFormatParam | None, Supported(_SAME)] = None
    cache_control: Annotated[JsonValue, Ignored(_SAME)] = None
    context_management: Annotated[ContextManagementParam | None, Supported(
        "the same edits: `input_tokens` counts the edited prompt, "
        "`context_management.original_input_tokens` the prompt before them")] = None
    speed: Annotated[JsonValue, Ignored(_SAME)] = None
    # what only generation reads: accepted, so a client can send its create body as it is
    max_tokens: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    stream: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    stop_sequences: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    temperature: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    top_p: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    top_k: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    metadata: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    service_tier: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    inference_geo: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    diagnostics: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    fallback_credit_token: Annotated[JsonValue, Ignored(_UNCOUNTED)] = None
    container: Annotated[JsonValue, Refused(_SAME)] = None
    mcp_servers: Annotated[JsonValue, Refused(_SAME)] = None
    fallbacks: Annotated[JsonValue, Refused(_SAME)] = None


PromptParams = MessageCreateParams | MessageCountTokensParams
