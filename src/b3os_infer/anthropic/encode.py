"""Neutral results and events into Anthropic Message objects and SSE frames."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from ..core import (
    ChatEvent,
    ChatResult,
    Finished,
    Part,
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
from ..http.sse import event_frame
from .errors import error_body

PING_SECONDS = 10.0
# the neutral stop reasons in the Messages API's words
STOP_REASONS: dict[StopReason, str] = {"end": "end_turn", "length": "max_tokens",
                                       "stop_string": "stop_sequence", "tool_calls": "tool_use"}
_EMPTY_THINKING = {"type": "thinking", "thinking": "", "signature": ""}


def usage_body(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_tokens,
        "service_tier": "standard",
    }


def tool_use_id(call_id: str) -> str:
    """A call the node minted, as the Messages API spells tool use ids."""
    return "toolu_" + call_id


def block_body(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        return {"type": "thinking", "thinking": part.thinking, "signature": part.signature or ""}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": tool_use_id(part.id), "name": part.name,
                "input": part.input, "caller": {"type": "direct"}}
    raise TypeError(f"{type(part).__name__} is not part of a reply")


def message_body(message_id: str, model: str, result: ChatResult) -> dict[str, Any]:
    content = [block_body(part) for part in result.parts]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": STOP_REASONS[result.stop_reason],
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
        self._open_kind: str | None = None

    def encode(self, event: ChatEvent) -> list[bytes]:
        if isinstance(event, Started):
            return self._start(event.usage)
        if isinstance(event, TextDelta):
            return self._open("text", {"type": "text", "text": ""}) + \
                [self._delta({"type": "text_delta", "text": event.text})]
        if isinstance(event, ThinkingDelta):
            return self._open("thinking", _EMPTY_THINKING) + \
                [self._delta({"type": "thinking_delta", "thinking": event.text})]
        if isinstance(event, ThinkingEnd):
            return self._open("thinking", _EMPTY_THINKING) + [
                self._delta({"type": "signature_delta", "signature": event.signature}),
                *self._close()]
        if isinstance(event, ToolCallStart):
            block = {"type": "tool_use", "id": tool_use_id(event.id), "name": event.name,
                     "input": {}, "caller": {"type": "direct"}}
            return self._close() + self._open("tool_use", block)
        if isinstance(event, ToolCallDelta):
            return [self._delta({"type": "input_json_delta", "partial_json": event.partial_json})]
        if isinstance(event, ToolCallEnd):
            return self._close()
        if isinstance(event, TokenLogprob):  # never asked for on this API
            return []
        return self._finish(event)

    def _start(self, usage: Usage) -> list[bytes]:
        message: dict[str, Any] = {
            "id": self.message_id, "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": usage_body(Usage(usage.input_tokens, 0, usage.cached_tokens)),
        }
        return [_frame({"type": "message_start", "message": message}),
                _frame({"type": "ping"})]

    def _open(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        if self._open_kind == kind:
            return []
        frames = self._close()
        self._index += 1
        self._open_kind = kind
        frames.append(_frame({"type": "content_block_start", "index": self._index,
                              "content_block": block}))
        return frames

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _frame({"type": "content_block_delta", "index": self._index, "delta": delta})

    def _close(self) -> list[bytes]:
        if self._open_kind is None:
            return []
        self._open_kind = None
        return [_frame({"type": "content_block_stop", "index": self._index})]

    def _finish(self, event: ChatEvent) -> list[bytes]:
        assert isinstance(event, Finished)
        usage = usage_body(event.usage)
        return self._close() + [
            _frame({"type": "message_delta",
                    "delta": {"stop_reason": STOP_REASONS[event.stop_reason],
                              "stop_sequence": event.stop_sequence},
                    "usage": usage}),
            _frame({"type": "message_stop"}),
        ]


def _frame(payload: dict[str, Any]) -> bytes:
    return event_frame(payload["type"], payload)


async def encode_stream(events: AsyncIterator[ChatEvent], encoder: MessageStreamEncoder,
                        request_id: str | None, error_of: Any,
                        keepalive: float = PING_SECONDS) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as an ``error`` event.

    While nothing else is sent (a long prompt being processed), a ``ping`` goes out every
    ``keepalive`` seconds, so clients and proxies with idle timeouts keep the stream.
    """
    try:
        async for event in with_keepalive(events, keepalive):
            if event is None:
                yield _frame({"type": "ping"})
                continue
            for frame in encoder.encode(event):
                yield frame
    except Exception as exc:  # noqa: BLE001 - every failure must reach the client
        yield _frame(error_body(error_of(exc), request_id))


async def with_keepalive(events: AsyncIterator[ChatEvent],
                         seconds: float) -> AsyncIterator[ChatEvent | None]:
    """The events, with None whenever ``seconds`` pass without one."""
    iterator = aiter(events)
    pending: asyncio.Future[ChatEvent] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=seconds)
            if not done:
                yield None
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield event
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
