"""Splitting a model's raw output into reasoning, text and tool calls, incrementally.

The parser owns its state, accepts pieces of any size (one character or many tokens
at once) and gives the same events, joined, whichever way the text was cut.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import ids
from ..core import (
    ChatEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..stops import partial_suffix
from .call_forms import CALL_HEADER, NOT_A_CALL, lead_call
from .profiles import CALL_CLOSE, CALL_OPEN, THINK_END, THINK_START


def _held(buffer: str, tag: str) -> int:
    """What to hold back: a possible start of ``tag`` and the whitespace before it."""
    partial = partial_suffix(buffer, tag)
    rest = buffer[: len(buffer) - partial]
    return partial + len(rest) - len(rest.rstrip())


class _JsonExtent:
    """Finds where one JSON value ends in streamed text (strings and escapes aware)."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.started = False

    def feed(self, text: str) -> int:
        """How many characters of ``text`` belong to the value; -1 if all, still open."""
        for index, char in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif char == "\\":
                    self.escaped = True
                elif char == '"':
                    self.in_string = False
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
                self.started = True
            elif char in "}]":
                self.depth -= 1
            if self.started and self.depth == 0:
                return index + 1
        return -1


class ReplyParser:
    """Reasoning first (when the reply starts inside it, or when ``may_think`` and the
    model opens it with ``<think>``), then text and tool calls."""

    def __init__(self, *, thinking: bool, tools: bool, may_think: bool = False,
                 show_thinking: bool = True,
                 sign: Callable[[str], str] = lambda text: "",
                 tool_names: frozenset[str] = frozenset()) -> None:
        # with ``tool_names``, a reply that starts as a bare or fenced JSON call to one of
        # them is a call too (call_forms.py); the ``<tool_call>`` tag needs only ``tools``
        self._names = tool_names
        self._state = "thinking" if thinking else \
            "opening" if may_think else self._reply_state()
        self._tools = tools
        self._close = CALL_CLOSE
        self._show_thinking = show_thinking
        self._sign = sign
        self._buffer = ""
        self._thinking: list[str] = []
        self._args: list[str] = []
        self._extent = _JsonExtent()
        self._strip_text_start = False
        self.calls = 0

    # ---- public ----------------------------------------------------------------

    @property
    def in_reasoning(self) -> bool:
        """Whether what is fed now belongs to the reasoning section."""
        return self._state == "thinking"

    @property
    def in_text(self) -> bool:
        """Whether what is fed now is reply text (not reasoning, not a tool call)."""
        return self._state in ("text", "lead")

    def feed(self, text: str) -> list[ChatEvent]:
        self._buffer += text
        events: list[ChatEvent] = []
        while True:
            before = (self._state, len(self._buffer))
            events += getattr(self, "_on_" + self._state)(final=False)
            if (self._state, len(self._buffer)) == before:
                return events

    def finish(self) -> list[ChatEvent]:
        """Flush what is held back once the model has stopped."""
        events = self.feed("")
        while True:   # a state may hand the rest on to the next (lead -> text), or take
            before = (self._state, len(self._buffer))    # it a line at a time
            events += getattr(self, "_on_" + self._state)(final=True)
            if (self._state, len(self._buffer)) == before:
                break
        self._buffer = ""
        return events

    # ---- states ----------------------------------------------------------------

    def _on_opening(self, final: bool) -> list[ChatEvent]:
        """The reply's start, held back until it shows whether the model reasons first."""
        head = self._buffer.lstrip()
        if head.startswith(THINK_START):
            self._state = "thinking"
        elif not THINK_START.startswith(head) or final:
            self._state = self._reply_state()
        return []

    def _on_thinking(self, final: bool) -> list[ChatEvent]:
        if not self._thinking:
            head = self._buffer.lstrip()
            if head.startswith(THINK_START):
                self._buffer = head[len(THINK_START):]
            elif THINK_START.startswith(head) and not final:
                return []
        end = self._buffer.find(THINK_END)
        if end >= 0:
            events = self._think_text(self._buffer[:end].rstrip())
            self._buffer = self._buffer[end + len(THINK_END):]
            self._state = self._reply_state()
            self._strip_text_start = True
            return events + [self._close_thinking()]
        if final:
            events = self._think_text(self._buffer.rstrip())
            return events + [self._close_thinking()]
        return self._think_text(self._take(len(self._buffer) - _held(self._buffer, THINK_END)))

    def _think_text(self, text: str) -> list[ChatEvent]:
        if not self._thinking:
            text = text.lstrip("\n")
        if not text:
            return []
        self._thinking.append(text)
        return [ThinkingDelta(text)] if self._show_thinking else []

    def _close_thinking(self) -> ChatEvent:
        return ThinkingEnd(self._sign("".join(self._thinking)))

    def _reply_state(self) -> str:
        return "lead" if self._names else "text"

    def _on_lead(self, final: bool) -> list[ChatEvent]:
        """The reply's start, held back until it shows whether it is a bare call."""
        stripped = self._buffer.lstrip()
        found = lead_call(stripped, final, self._names)
        if found is None:
            return []
        if found is NOT_A_CALL:
            self._state = "text"
            return []
        self._buffer = stripped[found.start:]
        self._close = found.close
        self._state = "header"
        return []

    def _on_text(self, final: bool) -> list[ChatEvent]:
        if self._strip_text_start:
            stripped = self._buffer.lstrip()
            if not stripped and not final:
                self._buffer = ""
                return []
            self._buffer = stripped
            self._strip_text_start = False
        start = self._buffer.find(CALL_OPEN) if self._tools else -1
        newline = self._buffer.find("\n") if self._names else -1
        if newline >= 0 and (start < 0 or newline < start):
            return self._on_line_break(newline, final)
        if start >= 0:
            text = self._buffer[:start].rstrip()
            self._buffer = self._buffer[start + len(CALL_OPEN):]
            self._close = CALL_CLOSE
            self._state = "header"
            return self._text(text)
        if final:
            return self._text(self._take(len(self._buffer)))
        hold = _held(self._buffer, CALL_OPEN) if self._tools else 0
        return self._text(self._take(len(self._buffer) - hold))

    def _on_line_break(self, newline: int, final: bool) -> list[ChatEvent]:
        """The text up to a line break; the next line may open a call (call_forms.py),
        and is held back until it shows whether it does."""
        stripped = self._buffer[newline + 1:].lstrip()
        found = lead_call(stripped, final, self._names)
        if found is None:
            return self._text(self._take(newline))
        if found is NOT_A_CALL:
            return self._text(self._take(newline + 1))
        text = self._buffer[:newline].rstrip()
        self._buffer = stripped[found.start:]
        self._close = found.close
        self._state = "header"
        return self._text(text)

    def _text(self, text: str) -> list[ChatEvent]:
        """Reply text, as long as no call came before it (text after a call is dropped)."""
        return [TextDelta(text)] if text and self.calls == 0 else []

    def _on_header(self, final: bool) -> list[ChatEvent]:
        match = CALL_HEADER.match(self._buffer)
        if match is None:
            if final and self._buffer.strip() and self.calls == 0 and \
                    not self._buffer.lstrip().startswith("{"):
                # not a call after all: the model wrote the tag as text
                return [TextDelta(CALL_OPEN + self._take(len(self._buffer)))]
            return []  # a call cut off before its name: nothing of it is usable
        name = json.loads(f'"{match.group(1)}"')
        self._buffer = self._buffer[match.end():]
        self._state = "arguments"
        self._extent = _JsonExtent()
        self._args = []
        return [ToolCallStart(ids.call_id(), name)]

    def _on_arguments(self, final: bool) -> list[ChatEvent]:
        end = self._extent.feed(self._buffer)
        piece = self._take(len(self._buffer) if end < 0 else end)
        events: list[ChatEvent] = []
        if piece:
            self._args.append(piece)
            events.append(ToolCallDelta(piece))
        if end >= 0 or final:
            events.append(ToolCallEnd(_parse_arguments("".join(self._args))))
            self.calls += 1
            self._state = "tail"
        return events

    def _on_tail(self, final: bool) -> list[ChatEvent]:
        close = self._buffer.find(self._close)
        if close >= 0:
            self._buffer = self._buffer[close + len(self._close):]
            self._state = "text"
        elif final:
            self._buffer = ""
        return []

    def _take(self, count: int) -> str:
        taken, self._buffer = self._buffer[:count], self._buffer[count:]
        return taken


def _parse_arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
