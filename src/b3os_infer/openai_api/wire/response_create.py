"""``POST /responses``: the request body, named after the SDK's
``ResponseCreateParams``, with ``reasoning`` and ``text`` (its output format)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel, member
from .chat import AUTOMATIC_CACHE, PER_USER, ReasoningEffort
from .common import PositiveInt, Temperature, TopP
from .response_items import ResponseInputItemParam
from .response_kinds import TEXT_FORMATS
from .response_tools import ToolChoiceParam, ToolParam

CONVERSATIONS = ("conversation objects are not served: continue with "
                 "`previous_response_id`, or send the whole conversation in `input`")
ENCRYPTED = "reasoning.encrypted_content"


class Reasoning(WireModel):
    effort: Annotated[ReasoningEffort | None, Supported(
        "none, minimal, low, medium, high, xhigh: the thinking budget (none: no "
        "reasoning)")] = None
    summary: Annotated[Literal["auto", "concise", "detailed"] | None, Supported(
        "any value: the reasoning item's one summary part is the reasoning text itself "
        "(these models write no separate summary), streamed as "
        "`response.reasoning_summary_*`; its `content` still carries the text")] = None
    generate_summary: Annotated[Literal["auto", "concise", "detailed"] | None, Supported(
        "the older spelling of `summary`")] = None


class ResponseFormatText(WireModel):
    type: Annotated[Literal["text"], Supported("`text`")]


class ResponseFormatJSONObject(WireModel):
    type: Annotated[Literal["json_object"], Supported("`json_object`")]


class ResponseFormatTextJSONSchemaConfig(WireModel):
    type: Annotated[Literal["json_schema"], Supported("`json_schema`")]
    name: Annotated[str, Ignored("required, as on OpenAI; it only names the schema")]
    schema_: Annotated[dict[str, JsonValue], Supported("the JSON Schema the reply follows"),
                       Field(alias="schema")]
    description: Annotated[str | None, Ignored("the grammar enforces the schema")] = None
    strict: Annotated[bool | None, Ignored("always strict here")] = None


TextFormat = Annotated[
    Annotated[ResponseFormatText, member("text")]
    | Annotated[ResponseFormatJSONObject, member("json_object")]
    | Annotated[ResponseFormatTextJSONSchemaConfig, member("json_schema")],
    TEXT_FORMATS.discriminator()]


class ResponseTextConfigParam(WireModel):
    format: Annotated[TextFormat | None, Supported(
        "text, json_object, json_schema, enforced by grammar")] = None
    verbosity: Annotated[str | None, Ignored("not a control these models have")] = None


class ResponseStreamOptions(WireModel):
    include_obfuscation: Annotated[bool | None, Ignored("no obfuscation padding is sent")
                                   ] = None


class ResponseCreateParams(WireModel):
    model: Annotated[str, Supported(
        "required; a model this node serves, never mapped to another")]
    input: Annotated[str | Annotated[list[ResponseInputItemParam], Field(min_length=1)],
                     Supported("a string (one user message) or items: messages, function "
                               "and custom tool calls and outputs, reasoning")]
    instructions: Annotated[str | None, Supported(
        "the system prompt; leading system and developer messages join it")] = None
    stream: Annotated[bool | None, Supported(
        "server-sent events with `sequence_number`, ending in one `response.completed`, "
        "`response.incomplete` or `response.failed`")] = None
    stream_options: Annotated[ResponseStreamOptions | None, Supported(
        "`include_obfuscation` is ignored")] = None
    max_output_tokens: Annotated[PositiveInt | None, Supported(
        "at most the model's output limit (larger values are lowered to it); absent: the "
        "model's default output cap (`default_output_tokens`, else that limit), bounded by "
        "the room left in the window; reasoning counts against it; reaching it ends the "
        "response `incomplete`")] = None
    temperature: Annotated[Temperature | None, Supported("0 to 2; 0 is greedy")] = None
    top_p: Annotated[TopP | None, Supported("0 to 1")] = None
    tools: Annotated[list[ToolParam] | None, Supported(
        "function, custom and namespace tools; web search accepted and left out")] = None
    tool_choice: Annotated[ToolChoiceParam | None, Supported(
        "none, auto, required, a named function or custom tool, or `allowed_tools`")
                           ] = None
    parallel_tool_calls: Annotated[bool | None, Supported(
        "false: at most one call per reply")] = None
    reasoning: Annotated[Reasoning | None, Supported(
        "`effort`: the thinking budget; `summary`: summary parts")] = None
    include: Annotated[list[str] | None, Supported(
        f"`{ENCRYPTED}`: reasoning items carry the reasoning sealed under the node's key; "
        "other values name outputs this server does not make and are ignored")] = None
    text: Annotated[ResponseTextConfigParam | None, Supported(
        "`format`: the output format")] = None
    truncation: Annotated[Literal["disabled"] | None, Supported(
        "`disabled` only: a prompt longer than the window fails with "
        "`context_length_exceeded`")] = None
    store: Annotated[bool | None, Supported(
        "true (the default): the finished response and its input are kept in the edge's "
        "database for the key that made it; false: nothing is kept")] = None
    previous_response_id: Annotated[str | None, Supported(
        "continues a stored response of the same key: its input and output come before "
        "this input (its `instructions` do not carry over)")] = None
    metadata: Annotated[dict[str, str] | None, Supported(
        "kept with the response and echoed")] = None
    prompt_cache_key: Annotated[str | None, Ignored(
        AUTOMATIC_CACHE + "; reuse is reported in `usage.input_tokens_details."
        "cached_tokens`")] = None
    prompt_cache_retention: Annotated[str | None, Ignored(AUTOMATIC_CACHE)] = None
    client_metadata: Annotated[dict[str, JsonValue] | None, Ignored(
        "client telemetry (Codex)")] = None
    service_tier: Annotated[str | None, Ignored("one tier here")] = None
    user: Annotated[str | None, Ignored(PER_USER)] = None
    safety_identifier: Annotated[str | None, Ignored("an opaque end-user id")] = None
    conversation: Annotated[JsonValue | None, Refused(CONVERSATIONS)] = None
    background: Annotated[JsonValue | None, Refused("background responses are not served")
                          ] = None
    prompt: Annotated[JsonValue | None, Refused("stored prompt templates are not served")
                      ] = None
    top_logprobs: Annotated[JsonValue | None, Refused(
        "log-probabilities are served on chat completions")] = None
    max_tool_calls: Annotated[JsonValue | None, Refused(
        "no built-in tools run here")] = None
    context_management: Annotated[JsonValue | None, Refused(
        "server-side compaction is not served")] = None
