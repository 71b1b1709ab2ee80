"""Neutral results and events into OpenAI chat completions and their chunks, built as
the models of ``wire/responses.py`` and serialised once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TypeVar, assert_never

from ..core import (
    ChatEvent,
    ChatResult,
    Finished,
    ServerToolCall,
    ServerToolResult,
    Started,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingPart,
    TokenLogprob,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallPart,
    ToolCallStart,
    Usage,
)
from ..errors import InferError
from ..http.sse import PING_COMMENT, data_frame, event_stream, json_data_frame
from ..node.choices import AllFinished, ChoiceEvent
from ..node.prompting import dumps
from ..usage_extension import usage_extension
from .envelope import error_body
from .wire.responses import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionTokenLogprob,
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
    ChoiceLogprobs,
    ChunkChoice,
    CompletionTokensDetails,
    CompletionUsage,
    FinishReason,
    Function,
    PromptTokensDetails,
    TopLogprob,
)

E = TypeVar("E")
DONE = data_frame("[DONE]")
_FINISH: dict[StopReason, FinishReason] = {
    "end": "stop", "stop_string": "stop", "length": "length", "window": "length",
    "tool_calls": "tool_calls", "paused": "stop"}


def tool_call_id(call_id: str) -> str:
    """A call the node minted, as the OpenAI API spells tool call ids."""
    return "call_" + call_id


def finish_reason(reason: StopReason) -> FinishReason:
    return _FINISH[reason]


def usage_of(usage: Usage) -> CompletionUsage:
    prompt = usage.prompt_tokens
    return CompletionUsage(
        prompt_tokens=prompt, completion_tokens=usage.output_tokens,
        total_tokens=prompt + usage.output_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_tokens),
        completion_tokens_details=CompletionTokensDetails(
            reasoning_tokens=usage.reasoning_tokens),
        **({"b3os": extension} if (extension := usage_extension(usage)) else {}))


def logprob_entry(item: TokenLogprob) -> ChatCompletionTokenLogprob:
    return ChatCompletionTokenLogprob(
        token=item.text, logprob=item.logprob, bytes=list(item.data),
        top_logprobs=[TopLogprob(token=text, logprob=lp, bytes=list(data))
                      for text, data, lp in item.top])


def _logprobs(entries: list[TokenLogprob] | None, asked: bool) -> ChoiceLogprobs | None:
    if not asked:
        return None
    return ChoiceLogprobs(content=[logprob_entry(e) for e in entries or []], refusal=None)


def _message(result: ChatResult) -> ChatCompletionMessage:
    text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
    calls = [p for p in result.parts if isinstance(p, ToolCallPart)]
    message = ChatCompletionMessage(role="assistant",
                                    content=text if text or not calls else None,
                                    refusal=None)
    thinking = "".join(p.thinking for p in result.parts if isinstance(p, ThinkingPart))
    if thinking:
        message.reasoning_content = message.reasoning = thinking
    if calls:
        message.tool_calls = [ChatCompletionMessageFunctionToolCall(
            id=tool_call_id(c.id), type="function",
            function=Function(name=c.name, arguments=dumps(c.input))) for c in calls]
    return message


def completion_body(completion_id: str, created: int, model: str, results: list[ChatResult],
                    usage: Usage, logprobs: bool) -> ChatCompletion:
    return ChatCompletion(
        id=completion_id, object="chat.completion", created=created, model=model,
        choices=[Choice(index=i, message=_message(r),
                        finish_reason=finish_reason(r.stop_reason),
                        logprobs=_logprobs(r.logprobs, logprobs))
                 for i, r in enumerate(results)],
        usage=usage_of(usage), system_fingerprint=None)


@dataclass
class _Choice:
    """What one choice's stream has sent so far."""

    started: bool = False
    calls: int = 0
    pending: list[TokenLogprob] = field(default_factory=list)


class ChunkEncoder:
    """Chat completion chunks: ``role`` first, tool calls by index, usage last when asked."""

    def __init__(self, completion_id: str, created: int, model: str, *,
                 include_usage: bool, logprobs: bool) -> None:
        self.completion_id, self.created, self.model = completion_id, created, model
        self.include_usage = include_usage
        self.logprobs = logprobs
        self._choices: dict[int, _Choice] = {}

    def _frame(self, choices: list[ChunkChoice], usage: CompletionUsage | None = None
               ) -> bytes:
        chunk = ChatCompletionChunk(id=self.completion_id, object="chat.completion.chunk",
                                    created=self.created, model=self.model,
                                    system_fingerprint=None, choices=choices)
        if self.include_usage:
            chunk.usage = usage
        return json_data_frame(chunk.to_json())

    def _chunk(self, index: int, delta: ChoiceDelta, finish: FinishReason | None = None,
               scored: list[TokenLogprob] | None = None) -> bytes:
        logprobs = _logprobs(scored, self.logprobs) if scored else None
        return self._frame([ChunkChoice(index=index, delta=delta, finish_reason=finish,
                                        logprobs=logprobs)])

    def encode(self, item: ChoiceEvent | AllFinished) -> list[bytes]:
        if isinstance(item, AllFinished):
            if not self.include_usage:
                return [DONE]
            return [self._frame([], usage_of(item.usage)), DONE]
        state = self._choices.setdefault(item.index, _Choice())
        frames = []
        if not state.started:
            state.started = True
            frames.append(self._chunk(item.index, ChoiceDelta(role="assistant", content="",
                                                              refusal=None)))
        return frames + self._event(item.index, state, item.event)

    def _event(self, index: int, state: _Choice, event: ChatEvent) -> list[bytes]:
        match event:
            case TextDelta(text=text):
                return [self._scored(index, state, ChoiceDelta(content=text))]
            case ThinkingDelta(text=text):
                return [self._scored(index, state,
                                     ChoiceDelta(reasoning_content=text, reasoning=text))]
            case ToolCallStart() | ToolCallDelta() | ToolCallEnd():
                return self._tool_call(index, state, event)
            case TokenLogprob():
                state.pending.append(event)     # goes out with the text it produced
                return []
            case Finished(stop_reason=reason):
                return [self._scored(index, state, ChoiceDelta(), finish_reason(reason))]
            case ThinkingEnd():
                return []   # a chunk has no place for the reasoning's signature
            case Started():
                return []   # the role chunk opens each choice; usage comes once, at the end
            case ServerToolCall() | ServerToolResult():
                return []   # Chat Completions offers no server tools: none run here
            case _:
                assert_never(event)

    def _tool_call(self, index: int, state: _Choice,
                   event: ToolCallStart | ToolCallDelta | ToolCallEnd) -> list[bytes]:
        """Calls are numbered in their choice; the arguments go out as their fragments."""
        match event:
            case ToolCallStart(id=call_id, name=name):
                state.calls += 1
                return [self._scored(index, state, ChoiceDelta(tool_calls=[ChoiceDeltaToolCall(
                    index=state.calls - 1, id=tool_call_id(call_id), type="function",
                    function=ChoiceDeltaToolCallFunction(name=name, arguments=""))]))]
            case ToolCallDelta(partial_json=fragment):
                return [self._scored(index, state, ChoiceDelta(tool_calls=[ChoiceDeltaToolCall(
                    index=state.calls - 1,
                    function=ChoiceDeltaToolCallFunction(arguments=fragment))]))]
            case ToolCallEnd():
                return []   # the fragments before it were the whole arguments
            case _:
                assert_never(event)

    def _scored(self, index: int, state: _Choice, delta: ChoiceDelta,
                finish: FinishReason | None = None) -> bytes:
        """A chunk carrying the log-probabilities held for it."""
        scored, state.pending = state.pending, []
        return self._chunk(index, delta, finish, scored=scored)


def encode_chunks(events: AsyncIterator[E], encode: Callable[[E], list[bytes]],
                  error_of: Callable[[BaseException], InferError]) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as a ``data:`` object with
    ``error``; a ``: ping`` comment fills every silence of ten seconds."""
    def failed(exc: Exception) -> bytes:
        return data_frame(error_body(error_of(exc)))
    return event_stream(events, encode, failed, PING_COMMENT)
