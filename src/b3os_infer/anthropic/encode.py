"""Neutral results and events into Anthropic Message objects and SSE frames."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..core import ChatEvent, ChatResult, Finished, Started, TextDelta, Usage
from ..http.sse import event_frame
from .errors import error_body


def usage_body(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_tokens,
        "service_tier": "standard",
    }


def message_body(message_id: str, model: str, result: ChatResult) -> dict[str, Any]:
    content = [{"type": "text", "text": result.text}] if result.text else []
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": result.stop_reason,
        "stop_sequence": result.stop_sequence,
        "usage": usage_body(result.usage),
    }


class MessageStreamEncoder:
    """Turns neutral chat events into Anthropic's SSE event sequence.

    Blocks are opened lazily, numbered from 0 and closed before the next opens, so
    the stream folds into exactly the message the non-streaming call returns.
    """

    def __init__(self, message_id: str, model: str) -> None:
        self.message_id = message_id
        self.model = model
        self._index = -1
        self._open: str | None = None

    def encode(self, event: ChatEvent) -> list[bytes]:
        if isinstance(event, Started):
            return self._start(event.usage)
        if isinstance(event, TextDelta):
            return self._text(event.text)
        return self._finish(event)

    def _start(self, usage: Usage) -> list[bytes]:
        message: dict[str, Any] = {
            "id": self.message_id, "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": usage_body(Usage(usage.input_tokens, 0, usage.cached_tokens)),
        }
        return [_frame({"type": "message_start", "message": message}),
                _frame({"type": "ping"})]

    def _text(self, text: str) -> list[bytes]:
        frames = []
        if self._open != "text":
            frames += self._close()
            self._index += 1
            self._open = "text"
            frames.append(_frame({"type": "content_block_start", "index": self._index,
                                  "content_block": {"type": "text", "text": ""}}))
        frames.append(_frame({"type": "content_block_delta", "index": self._index,
                              "delta": {"type": "text_delta", "text": text}}))
        return frames

    def _close(self) -> list[bytes]:
        if self._open is None:
            return []
        self._open = None
        return [_frame({"type": "content_block_stop", "index": self._index})]

    def _finish(self, event: Finished) -> list[bytes]:
        usage = usage_body(event.usage)
        return self._close() + [
            _frame({"type": "message_delta",
                    "delta": {"stop_reason": event.stop_reason,
                              "stop_sequence": event.stop_sequence},
                    "usage": usage}),
            _frame({"type": "message_stop"}),
        ]


def _frame(payload: dict[str, Any]) -> bytes:
    return event_frame(payload["type"], payload)


async def encode_stream(events: AsyncIterator[ChatEvent], encoder: MessageStreamEncoder,
                        request_id: str | None,
                        error_of: Any) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as an ``error`` event."""
    try:
        async for event in events:
            for frame in encoder.encode(event):
                yield frame
    except Exception as exc:  # noqa: BLE001 - every failure must reach the client
        yield _frame(error_body(error_of(exc), request_id))
