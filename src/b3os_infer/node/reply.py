"""Splitting a model's raw output into reasoning, text and tool calls, incrementally.

The parser owns its state, accepts pieces of any size (one character or many tokens
at once) and gives the same events, joined, whichever way the text was cut.

A tool call is reported (``ToolCallEnd``, counted in ``calls``) only when it is whole: a
reply that ends inside a call's arguments leaves the call open, without an end, so the
stop reason the caller gives (``length`` where the limit cut it) says why; arguments that
end but are not a JSON object raise ``MalformedToolCall``. Neither becomes a call with
empty input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum, auto
from typing import assert_never

from .. import ids
from ..core import (
    ChatEvent,
    JsonObject,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..errors import MalformedToolCall
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


class _State(Enum):
    """Where in the reply the parser is."""

    OPENING = auto()     # the start, until it shows whether the model reasons first
    THINKING = auto()    # the reasoning section
    LEAD = auto()        # the reply's start, until it shows whether it is a bare call
    TEXT = auto()        # reply text, watching for a call
    HEADER = auto()      # a call's opening, up to its name
    ARGUMENTS = auto()   # a call's arguments, until the JSON value closes
    TAIL = auto()        # after a call's arguments, up to what closes the call


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
        self._state = _State.THINKING if thinking else \
            _State.OPENING if may_think else self._reply_state()
        self._tools = tools
        self._close = CALL_CLOSE
        self._show_thinking = show_thinking
        self._sign = sign
        self._buffer = ""
        self._thinking: list[str] = []
        self._call_name = ""
        self._args: list[str] = []
        self._extent = _JsonExtent()
        self._strip_text_start = False
        self.calls = 0

    # ---- public ----------------------------------------------------------------

    @property
    def in_reasoning(self) -> bool:
        """Whether what is fed now belongs to the reasoning section."""
        return self._state is _State.THINKING

    @property
    def in_text(self) -> bool:
        """Whether what is fed now is reply text (not reasoning, not a tool call)."""
        return self._state in (_State.TEXT, _State.LEAD)

    def feed(self, text: str) -> list[ChatEvent]:
        """The events of ``text``; what may still grow into a tag is held back. Raises
        ``MalformedToolCall`` where a call's arguments end and are not a JSON object."""
        self._buffer += text
        return self._run(final=False)

    def finish(self) -> list[ChatEvent]:
        """Flush what is held back once the model has stopped. A call the reply ended
        inside is left without its ``ToolCallEnd`` (and not counted): it is incomplete."""
        # a state may hand the rest on to the next (lead -> text), or take it a line at a
        # time: the pass that changes nothing ends it
        events = self._run(final=False) + self._run(final=True)
        self._buffer = ""
        return events

    # ---- states ----------------------------------------------------------------

    def _run(self, final: bool) -> list[ChatEvent]:
        """Steps until a step changes neither the state nor the buffer."""
        events: list[ChatEvent] = []
        while True:
            before = (self._state, len(self._buffer))
            events += self._step(final)
            if (self._state, len(self._buffer)) == before:
                return events

    def _step(self, final: bool) -> list[ChatEvent]:
        match self._state:
            case _State.OPENING:
                return self._on_opening(final)
            case _State.THINKING:
                return self._on_thinking(final)
            case _State.LEAD:
                return self._on_lead(final)
            case _State.TEXT:
                return self._on_text(final)
            case _State.HEADER:
                return self._on_header(final)
            case _State.ARGUMENTS:
                return self._on_arguments(final)
            case _State.TAIL:
                return self._on_tail(final)
            case _:
                assert_never(self._state)

    def _on_opening(self, final: bool) -> list[ChatEvent]:
        """The reply's start, held back until it shows whether the model reasons first."""
        head = self._buffer.lstrip()
        if head.startswith(THINK_START):
            self._state = _State.THINKING
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

    def _reply_state(self) -> _State:
        return _State.LEAD if self._names else _State.TEXT

    def _on_lead(self, final: bool) -> list[ChatEvent]:
        """The reply's start, held back until it shows whether it is a bare call."""
        stripped = self._buffer.lstrip()
        found = lead_call(stripped, final, self._names)
        if found is None:
            return []
        if found is NOT_A_CALL:
            self._state = _State.TEXT
            return []
        self._buffer = stripped[found.start:]
        self._close = found.close
        self._state = _State.HEADER
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
            self._state = _State.HEADER
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
        self._state = _State.HEADER
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
        self._call_name = json.loads(f'"{match.group(1)}"')
        self._buffer = self._buffer[match.end():]
        self._state = _State.ARGUMENTS
        self._extent = _JsonExtent()
        self._args = []
        return [ToolCallStart(ids.call_id(), self._call_name)]

    def _on_arguments(self, final: bool) -> list[ChatEvent]:
        end = self._extent.feed(self._buffer)
        piece = self._take(len(self._buffer) if end < 0 else end)
        events: list[ChatEvent] = []
        if piece:
            self._args.append(piece)
            events.append(ToolCallDelta(piece))
        if end >= 0:
            events.append(ToolCallEnd(self._arguments()))
            self.calls += 1
            self._state = _State.TAIL
        elif final:
            # the reply ended inside the arguments: the call stays open, with no end and
            # not counted (what went out of it were fragments, never a call)
            self._state = _State.TAIL
        return events

    def _arguments(self) -> JsonObject:
        """The whole call's arguments; not a JSON object, the call is unusable."""
        text = "".join(self._args)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise MalformedToolCall(
                f"the model wrote a call to {self._call_name!r} whose arguments are not "
                f"valid JSON ({error.msg} at character {error.pos})", detail=text) from error
        if not isinstance(value, dict):
            raise MalformedToolCall(f"the model wrote a call to {self._call_name!r} whose "
                                    "arguments are JSON but not an object", detail=text)
        return value

    def _on_tail(self, final: bool) -> list[ChatEvent]:
        close = self._buffer.find(self._close)
        if close >= 0:
            self._buffer = self._buffer[close + len(self._close):]
            self._state = _State.TEXT
        elif final:
            self._buffer = ""
        return []

    def _take(self, count: int) -> str:
        taken, self._buffer = self._buffer[:count], self._buffer[count:]
        return taken
