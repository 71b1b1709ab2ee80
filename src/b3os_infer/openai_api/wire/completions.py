"""The legacy ``POST /completions``: the request body."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel
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

AS_ON_CHAT = "as on chat completions"
TokenIds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
Prompt = str | TokenIds | Annotated[list[str | TokenIds], Field(min_length=1)]


class CompletionCreateParams(WireModel):
    model: Annotated[str, Supported("required")]
    prompt: Annotated[Prompt, Supported(
        "required: a string, a list of strings, a list of token ids or a list of such "
        "lists; each prompt gets `n` choices")]
    max_tokens: Annotated[PositiveInt | None, Supported(
        "default 16, as OpenAI's; at most the model's output limit (larger values are "
        "lowered to it)")] = None
    stream: Annotated[bool | None, Supported(
        "`data:` chunks, then `[DONE]`; `: ping` comments while the prompt is processed")
    ] = None
    stream_options: Annotated[ChatCompletionStreamOptionsParam | None, Supported(
        "`include_usage`, as on chat completions")] = None
    stop: Annotated[Stop | None, Supported(AS_ON_CHAT)] = None
    temperature: Annotated[Temperature | None, Supported(AS_ON_CHAT)] = None
    top_p: Annotated[TopP | None, Supported(AS_ON_CHAT)] = None
    top_k: Annotated[TopK | None, Supported(AS_ON_CHAT)] = None
    presence_penalty: Annotated[Penalty | None, Supported(AS_ON_CHAT)] = None
    frequency_penalty: Annotated[Penalty | None, Supported(AS_ON_CHAT)] = None
    logit_bias: Annotated[LogitBias | None, Supported(AS_ON_CHAT)] = None
    seed: Annotated[int | None, Supported(AS_ON_CHAT)] = None
    logprobs: Annotated[Annotated[int, Field(ge=0, le=5)] | None, Supported(
        "0 to 5: `tokens`, `token_logprobs`, `top_logprobs`, `text_offset`")] = None
    n: Annotated[Choices | None, Supported("1 to 8 per prompt")] = None
    best_of: Annotated[PositiveInt | None, Supported(
        "only equal to `n` (every candidate is returned)")] = None
    echo: Annotated[bool | None, Supported(
        "the prompt text before the completion (not with `logprobs`)")] = None
    user: Annotated[str | None, Ignored(AS_ON_CHAT)] = None
    suffix: Annotated[JsonValue | None, Refused("no fill-in-the-middle")] = None
