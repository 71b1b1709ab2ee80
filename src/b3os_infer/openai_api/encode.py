"""Neutral results and events into OpenAI chat completion objects and chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    ChatResult,
    Finished,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    TokenLogprob,
    ToolCallDelta,
    ToolCallPart,
    ToolCallStart,
    Usage,
)
from ..errors import InferError
from ..http.sse import data_frame
from ..node.choices import AllFinished, ChoiceEvent
from ..node.prompting import dumps
from .errors import error_body

_FINISH = {"end": "stop", "stop_string": "stop", "length": "length",
           "tool_calls": "tool_calls"}


def tool_call_id(call_id: str) -> str:
    """A call the node minted, as the OpenAI API spells tool call ids."""
    return "call_" + call_id


def finish_reason(reason: StopReason) -> str:
    return _FINISH[reason]


def usage_body(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cached_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


def logprob_entry(item: TokenLogprob) -> dict[str, Any]:
    return {"token": item.text, "logprob": item.logprob, "bytes": list(item.data),
            "top_logprobs": [{"token": text, "logprob": lp, "bytes": list(data)}
                             for text, data, lp in item.top]}


def _logprobs(entries: list[TokenLogprob] | None, asked: bool) -> dict[str, Any] | None:
    if not asked:
        return None
    return {"content": [logprob_entry(e) for e in entries or []], "refusal": None}


def _message(result: ChatResult) -> dict[str, Any]:
    text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
    calls = [p for p in result.parts if isinstance(p, ToolCallPart)]
    message: dict[str, Any] = {"role": "assistant",
                               "content": text if text or not calls else None,
                               "refusal": None}
    thinking = "".join(p.thinking for p in result.parts if isinstance(p, ThinkingPart))
    if thinking:
        message["reasoning_content"] = message["reasoning"] = thinking
    if calls:
        message["tool_calls"] = [{"id": tool_call_id(c.id), "type": "function",
                                  "function": {"name": c.name, "arguments": dumps(c.input)}}
                                 for c in calls]
    return message


def completion_body(completion_id: str, created: int, model: str, results: list[ChatResult],
                    usage: Usage, logprobs: bool) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": i, "message": _message(r),
                     "finish_reason": finish_reason(r.stop_reason),
                     "logprobs": _logprobs(r.logprobs, logprobs)}
                    for i, r in enumerate(results)],
        "usage": usage_body(usage),
        "system_fingerprint": None,
    }


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
        self.base = {"id": completion_id, "object": "chat.completion.chunk",
                     "created": created, "model": model, "system_fingerprint": None}
        self.include_usage = include_usage
        self.logprobs = logprobs
        self._choices: dict[int, _Choice] = {}

    def _chunk(self, index: int, delta: dict[str, Any], finish: str | None = None,
               scored: list[TokenLogprob] | None = None) -> bytes:
        choice = {"index": index, "delta": delta, "finish_reason": finish,
                  "logprobs": _logprobs(scored, self.logprobs) if scored else None}
        chunk: dict[str, Any] = {**self.base, "choices": [choice]}
        if self.include_usage:
            chunk["usage"] = None
        return data_frame(chunk)

    def encode(self, item: ChoiceEvent | AllFinished) -> list[bytes]:
        if isinstance(item, AllFinished):
            frames = []
            if self.include_usage:
                frames.append(data_frame({**self.base, "choices": [],
                                          "usage": usage_body(item.usage)}))
            return frames + [data_frame("[DONE]")]
        state = self._choices.setdefault(item.index, _Choice())
        frames = []
        if not state.started:
            state.started = True
            frames.append(self._chunk(item.index, {"role": "assistant", "content": "",
                                                   "refusal": None}))
        delta = self._delta(state, item.event)
        if delta is not None:
            scored, state.pending = state.pending, []
            frames.append(self._chunk(item.index, delta, scored=scored))
        elif isinstance(item.event, Finished):
            scored, state.pending = state.pending, []
            frames.append(self._chunk(item.index, {}, finish_reason(item.event.stop_reason),
                                      scored=scored))
        return frames

    def _delta(self, state: _Choice, event: object) -> dict[str, Any] | None:
        if isinstance(event, TextDelta):
            return {"content": event.text}
        if isinstance(event, ThinkingDelta):
            return {"reasoning_content": event.text, "reasoning": event.text}
        if isinstance(event, ToolCallStart):
            state.calls += 1
            return {"tool_calls": [{"index": state.calls - 1, "id": tool_call_id(event.id),
                                    "type": "function",
                                    "function": {"name": event.name, "arguments": ""}}]}
        if isinstance(event, ToolCallDelta):
            return {"tool_calls": [{"index": state.calls - 1,
                                    "function": {"arguments": event.partial_json}}]}
        if isinstance(event, TokenLogprob):
            state.pending.append(event)
        return None


async def encode_chunks(events: AsyncIterator[Any], encode: Callable[[Any], list[bytes]],
                        error_of: Callable[[BaseException], InferError]
                        ) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as a ``data:`` object with ``error``."""
    try:
        async for event in events:
            for frame in encode(event):
                yield frame
    except Exception as exc:  # noqa: BLE001 - every failure must reach the client
        yield data_frame(error_body(error_of(exc)))
