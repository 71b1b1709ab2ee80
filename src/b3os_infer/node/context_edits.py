"""Context editing: the conversation edited before it is rendered (Anthropic's
``context_management``), measured with the model's own template and tokenizer.

Two edits, applied in the order asked, each measured against the prompt the one before
it left: ``ClearToolUses`` replaces the results of old tool calls with ``CLEARED_RESULT``
(and, if asked, their inputs with ``{}``); ``ClearThinking`` removes the thinking blocks
of earlier assistant turns. An edit that clears nothing is not reported. The client keeps
its full history and sends it again; the edit is made again on every request.

An edit changes the prompt where it clears, so the cached prefix ends there: the prompt
after the first cleared block is computed anew (``usage.cache_read_input_tokens`` shows
what was reused).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from ..core import (
    ChatRequest,
    ClearThinking,
    ClearToolUses,
    ContextEdit,
    Message,
    Part,
    RedactedThinkingPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolsChangedPart,
)
from .chat_model import Prompt

CLEARED_RESULT = "[tool result cleared to save context]"

Counter = Callable[[ChatRequest], int]


class PromptCounter:
    """Counts prompts for ``edit_context`` with ``render`` and keeps the last one, so the
    request the edits settle on is not rendered and tokenized again for the reply."""

    def __init__(self, render: Callable[[ChatRequest], Prompt]) -> None:
        self._render = render
        self._last: tuple[ChatRequest, Prompt] | None = None

    def count(self, request: ChatRequest) -> int:
        prompt = self._render(request)
        self._last = (request, prompt)
        return len(prompt.tokens)

    def prompt(self, request: ChatRequest) -> Prompt:
        """``request``'s prompt: the one counted last if it is that request's."""
        if self._last is not None and self._last[0] is request:
            return self._last[1]
        return self._render(request)


@dataclass(frozen=True)
class AppliedEdit:
    """What one edit cleared: ``cleared`` tool uses (``clear_tool_uses``) or thinking
    turns (``clear_thinking``), and the prompt tokens that went with them."""

    kind: Literal["clear_tool_uses", "clear_thinking"]
    cleared: int
    cleared_tokens: int


@dataclass(frozen=True)
class EditedContext:
    """The request as the model reads it, the edits that changed it, and the prompt's
    length before any edit and after them all (None where no edit needed them counted:
    then both are the length of ``request``, which no edit changed)."""

    request: ChatRequest
    applied: tuple[AppliedEdit, ...] = ()
    original_tokens: int | None = None
    tokens: int | None = None


class _Measured:
    """The request being edited and its prompt length, counted only when asked."""

    def __init__(self, request: ChatRequest, count: Counter) -> None:
        self.request = request
        self._count = count
        self._tokens: int | None = None
        self.original: int | None = None

    @property
    def counted(self) -> int | None:
        return self._tokens

    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = self._count(self.request)
            if self.original is None:
                self.original = self._tokens
        return self._tokens

    def try_edit(self, messages: list[Message], at_least: int = 0) -> int | None:
        """Tokens cleared by ``messages`` in place of the request's; the edit is kept only
        if that is at least ``at_least``."""
        before = self.tokens()
        edited = replace(self.request, messages=messages)
        after = self._count(edited)
        if before - after < at_least:
            return None
        self.request, self._tokens = edited, after
        return before - after


def edit_context(request: ChatRequest, count: Counter) -> EditedContext:
    """``request`` with its ``context_edits`` made, counting prompts with ``count``."""
    if not request.context_edits:
        return EditedContext(request)
    measured = _Measured(request, count)
    applied: list[AppliedEdit] = []
    for edit in request.context_edits:
        done = _apply(edit, measured)
        if done is not None:
            applied.append(done)
    return EditedContext(measured.request, tuple(applied), measured.original, measured.counted)


def _apply(edit: ContextEdit, measured: _Measured) -> AppliedEdit | None:
    if isinstance(edit, ClearToolUses):
        return _clear_tool_uses(edit, measured)
    return _clear_thinking(edit, measured)


# ---- clear_tool_uses -------------------------------------------------------------------


def _tool_uses(messages: list[Message]) -> list[ToolCallPart]:
    return [p for m in messages if m.role == "assistant" for p in m.parts
            if isinstance(p, ToolCallPart)]


def _answered(messages: list[Message]) -> set[str]:
    return {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}


def _triggered(edit: ClearToolUses, uses: int, measured: _Measured) -> bool:
    if edit.trigger_tool_uses is not None:
        return uses > edit.trigger_tool_uses
    return edit.trigger_tokens is None or measured.tokens() > edit.trigger_tokens


def _to_clear(edit: ClearToolUses, messages: list[Message]) -> list[ToolCallPart]:
    """The tool uses older than the ``keep`` most recent, answered, of tools not excluded."""
    uses = _tool_uses(messages)
    older = uses[:max(0, len(uses) - edit.keep)]
    answered = _answered(messages)
    return [u for u in older if u.name not in edit.exclude and u.id in answered]


def _clears_input(edit: ClearToolUses, name: str) -> bool:
    inputs = edit.clear_inputs
    return inputs if isinstance(inputs, bool) else name in inputs


def _cleared_part(part: Part, edit: ClearToolUses, ids: set[str]) -> Part:
    if isinstance(part, ToolResultPart) and part.call_id in ids:
        return ToolResultPart(part.call_id, CLEARED_RESULT)
    if isinstance(part, ToolCallPart) and part.id in ids and _clears_input(edit, part.name):
        return ToolCallPart(part.id, part.name, {})
    return part


def _clear_tool_uses(edit: ClearToolUses, measured: _Measured) -> AppliedEdit | None:
    messages = measured.request.messages
    if not _triggered(edit, len(_tool_uses(messages)), measured):
        return None
    targets = _to_clear(edit, messages)
    if not targets:
        return None
    ids = {u.id for u in targets}
    edited = [Message(m.role, [_cleared_part(p, edit, ids) for p in m.parts])
              for m in messages]
    cleared = measured.try_edit(edited, edit.clear_at_least)
    if cleared is None:
        return None
    return AppliedEdit("clear_tool_uses", len(targets), cleared)


# ---- clear_thinking --------------------------------------------------------------------


def _is_thinking(part: Part) -> bool:
    return isinstance(part, ThinkingPart | RedactedThinkingPart)


def _opens_turn(message: Message) -> bool:
    """A user message that says more than tool results: the next assistant message starts
    a new turn (a turn's tool loop answers in messages of tool results only)."""
    return message.role == "user" and \
        any(not isinstance(p, ToolResultPart | ToolsChangedPart) for p in message.parts)


def assistant_turns(messages: list[Message]) -> list[int]:
    """Per message, the number of the assistant turn it belongs to (-1: none yet)."""
    turns: list[int] = []
    turn, opened = -1, True
    for message in messages:
        if message.role == "assistant" and opened:
            turn, opened = turn + 1, False
        opened = opened or _opens_turn(message)
        turns.append(turn if message.role == "assistant" else -1)
    return turns


def _clear_thinking(edit: ClearThinking, measured: _Measured) -> AppliedEdit | None:
    if edit.keep_turns is None:
        return None
    messages = measured.request.messages
    turns = assistant_turns(messages)
    thinking = sorted({turns[i] for i, m in enumerate(messages)
                       if any(_is_thinking(p) for p in m.parts) and turns[i] >= 0})
    cleared = set(thinking[:max(0, len(thinking) - edit.keep_turns)])
    if not cleared:
        return None
    edited = [Message(m.role, [p for p in m.parts if not _is_thinking(p)])
              if turns[i] in cleared else m for i, m in enumerate(messages)]
    tokens = measured.try_edit(edited)
    return AppliedEdit("clear_thinking", len(cleared), tokens or 0)
