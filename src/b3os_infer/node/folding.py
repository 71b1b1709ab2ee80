"""A reply's events gathered into the whole reply: the non-streaming form of a
generation."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import assert_never

from ..core import (
    ChatResult,
    Counted,
    Finished,
    NodeEvent,
    Part,
    ServerToolCall,
    ServerToolCallPart,
    ServerToolResult,
    ServerToolResultPart,
    Started,
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
)


class Folder:
    """Events of one reply gathered into its parts."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.logprobs: list[TokenLogprob] | None = None
        self._thinking: list[str] = []
        self._call: ToolCallStart | None = None

    def add(self, event: NodeEvent) -> None:
        match event:
            case TextDelta():
                self._text(event.text)
            case ThinkingDelta():
                self._thinking.append(event.text)
            case ThinkingEnd():
                self.parts.append(ThinkingPart("".join(self._thinking), event.signature))
                self._thinking = []
            case ToolCallStart():
                self._call = event
            case ToolCallEnd():
                self._end_call(event)
            case TokenLogprob():
                self.logprobs = [*(self.logprobs or []), event]
            case ServerToolCall():
                self.parts.append(ServerToolCallPart(event.id, event.name, event.input))
            case ServerToolResult():
                self.parts.append(ServerToolResultPart(event.call_id, event.outcome))
            case Started() | Counted() | ToolCallDelta() | Finished():
                pass    # usage and the end are the caller's; a call is whole at its end
            case _:
                assert_never(event)

    def _end_call(self, end: ToolCallEnd) -> None:
        if self._call is None:
            raise RuntimeError("a tool call ended that never started")
        self.parts.append(ToolCallPart(self._call.id, self._call.name, end.input))
        self._call = None

    def _text(self, text: str) -> None:
        last = self.parts[-1] if self.parts else None
        if isinstance(last, TextPart):
            self.parts[-1] = TextPart(last.text + text)
        else:
            self.parts.append(TextPart(text))

    def result(self, finished: Finished) -> ChatResult:
        return ChatResult(self.parts, finished.stop_reason, finished.stop_sequence,
                          finished.usage, self.logprobs)


async def fold(events: AsyncGenerator[NodeEvent, None]) -> ChatResult:
    """A whole reply from its events."""
    folder = Folder()
    async with aclosing(events):
        async for event in events:
            if isinstance(event, Finished):
                return folder.result(event)
            folder.add(event)
    raise RuntimeError("the generation ended without a final event")


__all__ = ["Folder", "fold"]
