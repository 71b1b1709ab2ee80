"""What the OpenAI routes answer, as models named after the SDK's: ``ChatCompletion``,
``ChatCompletionChunk`` and the legacy ``Completion``.

A response is built as a model and serialised once (``to_json``). Only the fields given
when it is built are written: a chunk's delta carries just what changed, as the SDKs'
accumulators expect, and a null the API spells out (``finish_reason``, ``usage``) is
given as ``None``.
"""

from __future__ import annotations

from typing import Literal

from ...usage_extension import UsageExtension
from ...wire_models import SentModel

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call"]


class WireResponse(SentModel):
    """A chat or completions object: the fields it was never given are left out."""

    omit_unset = True


# ---- usage and log-probabilities, shared by every response ---------------------------


class PromptTokensDetails(WireResponse):
    cached_tokens: int | None = None


class CompletionTokensDetails(WireResponse):
    reasoning_tokens: int | None = None


class CompletionUsage(WireResponse):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None
    # ours, only where speculative decoding drafted for the reply (docs/engine.md)
    b3os: UsageExtension | None = None


class TopLogprob(WireResponse):
    token: str
    logprob: float
    bytes: list[int] | None


class ChatCompletionTokenLogprob(WireResponse):
    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(WireResponse):
    content: list[ChatCompletionTokenLogprob] | None
    refusal: list[ChatCompletionTokenLogprob] | None


# ---- a whole chat completion ---------------------------------------------------------


class Function(WireResponse):
    name: str
    arguments: str


class ChatCompletionMessageFunctionToolCall(WireResponse):
    id: str
    type: Literal["function"]
    function: Function


class ChatCompletionMessage(WireResponse):
    role: Literal["assistant"]
    content: str | None
    refusal: str | None
    # not in OpenAI's schema: reasoning as open servers send it (both spellings)
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChatCompletionMessageFunctionToolCall] | None = None


class Choice(WireResponse):
    index: int
    message: ChatCompletionMessage
    finish_reason: FinishReason
    logprobs: ChoiceLogprobs | None


class ChatCompletion(WireResponse):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None


# ---- chunks of a streamed chat completion --------------------------------------------


class ChoiceDeltaToolCallFunction(WireResponse):
    name: str | None = None
    arguments: str | None = None


class ChoiceDeltaToolCall(WireResponse):
    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: ChoiceDeltaToolCallFunction | None = None


class ChoiceDelta(WireResponse):
    role: Literal["assistant"] | None = None
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChoiceDeltaToolCall] | None = None


class ChunkChoice(WireResponse):
    index: int
    delta: ChoiceDelta
    finish_reason: FinishReason | None
    logprobs: ChoiceLogprobs | None


class ChatCompletionChunk(WireResponse):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str | None = None
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None


# ---- the legacy text completion ------------------------------------------------------


class Logprobs(WireResponse):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]]
    text_offset: list[int]


class CompletionChoice(WireResponse):
    index: int
    text: str
    logprobs: Logprobs | None
    finish_reason: Literal["stop", "length", "content_filter"] | None


class Completion(WireResponse):
    id: str
    object: Literal["text_completion"]
    created: int
    model: str
    system_fingerprint: str | None = None
    choices: list[CompletionChoice]
    usage: CompletionUsage | None = None
