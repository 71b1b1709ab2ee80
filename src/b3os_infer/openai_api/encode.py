"""Neutral results and events into OpenAI chat completion objects and chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..core import ChatEvent, ChatResult, Finished, StopReason, TextDelta, TextPart, Usage
from ..errors import InferError
from ..http.sse import data_frame
from .errors import error_body

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
           "tool_use": "tool_calls"}


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


def completion_body(completion_id: str, created: int, model: str,
                    result: ChatResult) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply_text(result),
                        "refusal": None},
            "finish_reason": finish_reason(result.stop_reason),
            "logprobs": None,
        }],
        "usage": usage_body(result.usage),
        "system_fingerprint": None,
    }


def reply_text(result: ChatResult) -> str:
    return "".join(p.text for p in result.parts if isinstance(p, TextPart))


class ChunkEncoder:
    """Chat completion chunks: ``role`` in the first only, usage last when asked."""

    def __init__(self, completion_id: str, created: int, model: str,
                 include_usage: bool) -> None:
        self.base = {"id": completion_id, "object": "chat.completion.chunk",
                     "created": created, "model": model, "system_fingerprint": None}
        self.include_usage = include_usage
        self._started = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk: dict[str, Any] = {
            **self.base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                         "logprobs": None}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return data_frame(chunk)

    def encode(self, event: ChatEvent) -> list[bytes]:
        frames = []
        if not self._started:
            self._started = True
            frames.append(self._chunk({"role": "assistant", "content": ""}))
        if isinstance(event, TextDelta):
            frames.append(self._chunk({"content": event.text}))
        elif isinstance(event, Finished):
            frames.append(self._chunk({}, finish_reason(event.stop_reason)))
            if self.include_usage:
                frames.append(data_frame({**self.base, "choices": [],
                                          "usage": usage_body(event.usage)}))
            frames.append(data_frame("[DONE]"))
        return frames


async def encode_chunks(events: AsyncIterator[ChatEvent], encoder: ChunkEncoder,
                        error_of: Any) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as a ``data:`` object with ``error``."""
    try:
        async for event in events:
            for frame in encoder.encode(event):
                yield frame
    except Exception as exc:  # noqa: BLE001 - every failure must reach the client
        error: InferError = error_of(exc)
        yield data_frame(error_body(error))
