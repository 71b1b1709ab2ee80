"""Conversation rules the real Messages API enforces, with its wording."""

from __future__ import annotations

from ..core import Message, ToolCallPart, ToolResultPart, ToolsChangedPart
from ..errors import InvalidRequest


def invalid(path: str, message: str) -> InvalidRequest:
    """A 400 ``invalid_request`` naming ``path``, the way pydantic's errors read."""
    return InvalidRequest(f"{path}: {message}" if path else message, param=path or None)


def check_tool_pairing(messages: list[Message]) -> None:
    """Each ``tool_use`` is answered at the start of the next user message, and only then."""
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        previous = messages[index - 1] if index else None
        asked = [p.id for p in previous.parts if isinstance(p, ToolCallPart)] \
            if previous is not None and previous.role == "assistant" else []
        _check_results(index, message, asked)
    for index, message in enumerate(messages[:-1]):
        if message.role != "assistant":
            continue
        asked = [p.id for p in message.parts if isinstance(p, ToolCallPart)]
        following = messages[index + 1]
        answered = {p.call_id for p in following.parts if isinstance(p, ToolResultPart)}
        missing = [i for i in asked if i not in answered]
        if missing:
            raise invalid(f"messages[{index}]", "`tool_use` ids were found without "
                          f"`tool_result` blocks immediately after: {', '.join(missing)}. Each "
                          "`tool_use` block must have a corresponding `tool_result` block in "
                          "the next message.")


def _check_results(index: int, message: Message, asked: list[str]) -> None:
    seen_other = False
    for j, part in enumerate(message.parts):
        if isinstance(part, ToolsChangedPart):
            continue   # the tools a result's `tool_reference` blocks load stand after it
        if not isinstance(part, ToolResultPart):
            seen_other = True
            continue
        path = f"messages[{index}].content[{j}]"
        if part.call_id not in asked:
            raise invalid(path, "unexpected `tool_use_id` found in `tool_result` blocks: "
                          f"{part.call_id}. Each `tool_result` block must have a "
                          "corresponding `tool_use` block in the previous message.")
        if seen_other:
            raise invalid(path, "`tool_result` blocks must come first in the message that "
                          "answers `tool_use` blocks.")
