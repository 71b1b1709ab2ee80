"""``POST /chat/completions``: the request body and its response formats."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel, member
from .common import (
    ChatCompletionStreamOptionsParam,
    Choices,
    LogitBias,
    Penalty,
    PositiveInt,
    Stop,
    Temperature,
    TopK,
    TopP,
)
from .kinds import RESPONSE_FORMATS
from .messages import ChatCompletionMessageParam
from .tools import ChatCompletionToolChoiceOptionParam, ChatCompletionToolUnionParam

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class ResponseFormatText(WireModel):
    type: Annotated[Literal["text"], Supported("`text`")]


class ResponseFormatJSONObject(WireModel):
    type: Annotated[Literal["json_object"], Supported("`json_object`")]


class JSONSchema(WireModel):
    name: Annotated[str, Ignored("required, as on OpenAI; it only names the schema")]
    description: Annotated[str | None, Ignored("the grammar enforces the schema")] = None
    schema_: Annotated[dict[str, JsonValue] | None, Supported(
        "the JSON Schema the reply follows (absent: any JSON object)"),
        Field(alias="schema")] = None
    strict: Annotated[bool | None, Ignored("always strict here")] = None


class ResponseFormatJSONSchema(WireModel):
    type: Annotated[Literal["json_schema"], Supported("`json_schema`")]
    json_schema: Annotated[JSONSchema, Supported("the schema")]


ResponseFormat = Annotated[
    Annotated[ResponseFormatText, member("text")]
    | Annotated[ResponseFormatJSONObject, member("json_object")]
    | Annotated[ResponseFormatJSONSchema, member("json_schema")],
    RESPONSE_FORMATS.discriminator()]

PER_USER = "an opaque end-user id; nothing here is billed per user"
NOT_KEPT = "stored completions are not kept"
AUTOMATIC_CACHE = "the prefix cache is automatic"


class ChatCompletionCreateParams(WireModel):
    model: Annotated[str, Supported(
        "required; a model this node serves, never mapped to another")]
    messages: Annotated[list[ChatCompletionMessageParam], Field(min_length=1), Supported(
        "required; roles system, developer, user, assistant, tool")]
    max_completion_tokens: Annotated[PositiveInt | None, Supported(
        "at most the model's output limit (larger values are lowered to it); absent: the "
        "model's default output cap (`default_output_tokens`, else that limit), bounded by "
        "the room left in the window; reasoning counts against it")] = None
    max_tokens: Annotated[PositiveInt | None, Supported(
        "the older spelling of `max_completion_tokens`")] = None
    stream: Annotated[bool | None, Supported(
        "`data:` chunks, `role` in the first chunk only, then `[DONE]`; `: ping` comments "
        "while the prompt is processed")] = None
    stream_options: Annotated[ChatCompletionStreamOptionsParam | None, Supported(
        "`include_usage`: `usage: null` on every chunk, then one chunk with `choices: []` "
        "and the usage; `include_obfuscation` ignored")] = None
    stop: Annotated[Stop | None, Supported(
        "a string or up to 4; also across token boundaries and in streams")] = None
    temperature: Annotated[Temperature | None, Supported("0 to 2; 0 is greedy")] = None
    top_p: Annotated[TopP | None, Supported("0 to 1")] = None
    top_k: Annotated[TopK | None, Supported("an extension (as vLLM's): >= 0, 0 = off")] = None
    presence_penalty: Annotated[Penalty | None, Supported(
        "-2 to 2, over the tokens generated so far")] = None
    frequency_penalty: Annotated[Penalty | None, Supported(
        "-2 to 2, over the tokens generated so far")] = None
    logit_bias: Annotated[LogitBias | None, Supported(
        "token ids of the model's own vocabulary, -100 to 100")] = None
    seed: Annotated[int | None, Supported(
        "the same seed, prompt and settings give the same reply")] = None
    logprobs: Annotated[bool | None, Supported(
        "log-probabilities of the reply's text tokens, under the model's distribution "
        "before sampling settings")] = None
    top_logprobs: Annotated[Annotated[int, Field(ge=0, le=20)] | None, Supported(
        "0 to 20; needs `logprobs: true`")] = None
    n: Annotated[Choices | None, Supported(
        "1 to 8 choices, generated side by side in the batch; seeds `seed`, `seed + 1`, "
        "...")] = None
    tools: Annotated[list[ChatCompletionToolUnionParam] | None, Supported(
        "`function` tools; arguments valid against `parameters` by construction "
        "(grammar-constrained decoding)")] = None
    tool_choice: Annotated[ChatCompletionToolChoiceOptionParam | None, Supported(
        "none, auto, required, or a named function")] = None
    parallel_tool_calls: Annotated[bool | None, Supported(
        "false: at most one call per reply")] = None
    response_format: Annotated[ResponseFormat | None, Supported(
        "text, json_object, json_schema (always strict here), enforced by grammar")] = None
    reasoning_effort: Annotated[ReasoningEffort | None, Supported(
        "none, minimal, low, medium, high, xhigh: the thinking budget (none or absent: no "
        "reasoning)")] = None
    user: Annotated[str | None, Ignored(PER_USER)] = None
    safety_identifier: Annotated[str | None, Ignored("an opaque end-user id")] = None
    metadata: Annotated[dict[str, str] | None, Ignored(NOT_KEPT)] = None
    store: Annotated[bool | None, Ignored(NOT_KEPT)] = None
    service_tier: Annotated[str | None, Ignored("one tier here")] = None
    prompt_cache_key: Annotated[str | None, Ignored(
        AUTOMATIC_CACHE + "; reuse is reported in `usage.prompt_tokens_details."
        "cached_tokens`")] = None
    prompt_cache_retention: Annotated[str | None, Ignored(AUTOMATIC_CACHE)] = None
    prompt_cache_options: Annotated[dict[str, JsonValue] | None, Ignored(AUTOMATIC_CACHE)
                                    ] = None
    verbosity: Annotated[str | None, Ignored("not a control these models have")] = None
    modalities: Annotated[list[str] | None, Ignored(
        "text is the only output; asking for `audio` is refused")] = None
    prediction: Annotated[dict[str, JsonValue] | None, Ignored(
        "predicted outputs only change speed, not the reply")] = None
    audio: Annotated[JsonValue | None, Refused("no audio output")] = None
    web_search_options: Annotated[JsonValue | None, Refused(
        "no server-side web search")] = None
    moderation: Annotated[JsonValue | None, Refused("no moderation of input or output "
                                                    "here")] = None
    functions: Annotated[JsonValue | None, Refused("deprecated: declare them in `tools`")
                         ] = None
    function_call: Annotated[JsonValue | None, Refused("deprecated: use `tool_choice`")
                             ] = None
