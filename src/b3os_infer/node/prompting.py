"""Neutral conversations into the messages and variables a chat template expects.

Native profiles get Hugging Face conventions (``tools``, ``tool_calls`` with argument
objects, ``tool`` role messages, ``reasoning_content``, ``enable_thinking``). The generic
profile gets everything as text: a tool section in the system prompt, calls and results
in ``<tool_call>`` / ``<tool_response>`` tags and reasoning in ``<think>`` tags.
"""

from __future__ import annotations

import json
from typing import Any

from ..core import (
    ChatRequest,
    Message,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
    ToolsChangedPart,
    merge_turns,
)
from .profiles import CALL_CLOSE, CALL_OPEN, THINK_CLOSE, THINK_OPEN, ModelProfile
from .server_tools.functions import unfold

GENERIC_TOOL_PROMPT = """# Tools

You may call one or more functions to help with the user's request. The functions are
described inside <tools></tools>, one JSON object per line:
<tools>
{tools}
</tools>

To call a function, reply with one JSON object per call, inside <tool_call></tool_call> tags:
<tool_call>
{{"name": "<function name>", "arguments": {{<arguments as a JSON object>}}}}
</tool_call>
The results come back inside <tool_response></tool_response> tags."""

TOOLS_ADDED = """More functions can be called from here on, the same way as the others, one JSON
object per line:
<tools>
{tools}
</tools>"""
TOOLS_REMOVED = "These functions can no longer be called: {names}."


def dumps(value: Any) -> str:
    """Byte-stable JSON for what goes back into prompts (keys keep their order)."""
    return json.dumps(value, ensure_ascii=False)


def tool_lines(tools: list[Tool]) -> str:
    return "\n".join(dumps({"name": t.name, "description": t.description or "",
                            "parameters": t.input_schema}) for t in tools)


def template_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description
                                              or "", "parameters": t.input_schema}}
            for t in tools]


class PromptBuilder:
    def __init__(self, profile: ModelProfile, *, tool_changes: bool = True) -> None:
        self.profile = profile
        # False where the request leaves tools out of the prompt (tool_choice none): tools
        # loaded or removed mid-conversation are left out with them
        self.tool_changes = tool_changes

    def system_text(self, request: ChatRequest, tools: list[Tool]) -> str | None:
        """The system turn. Where the tool prompt is ours (the generic profile), the tools
        come first, as in Anthropic's cache order (tools, system, messages): agents send the
        same tools from every directory, while their system text names the directory early,
        so prompts of sessions in different directories still share the whole tool block."""
        parts = []
        if tools and not self.profile.native_tools:
            parts.append(GENERIC_TOOL_PROMPT.format(tools=tool_lines(tools)))
        if request.system:
            parts.append(request.system)
        return "\n\n".join(parts) if parts else None

    def turns(self, request: ChatRequest, tools: list[Tool]) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        system = self.system_text(request, tools)
        if system:
            turns.append({"role": "system", "content": system})
        for message in merge_turns(unfold(request.messages)):
            turns.extend(self._message(message))
        return turns

    def _message(self, message: Message) -> list[dict[str, Any]]:
        if message.role == "assistant":
            return [self._assistant(message)]
        return self._user(message)

    def _assistant(self, message: Message) -> dict[str, Any]:
        thinking = "".join(p.thinking for p in message.parts if isinstance(p, ThinkingPart))
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
        turn: dict[str, Any] = {"role": "assistant"}
        if self.profile.native_tools or self.profile.native_reasoning:
            turn["content"] = text
            if thinking and self.profile.native_reasoning:
                turn["reasoning_content"] = thinking
            if calls and self.profile.native_tools:
                turn["tool_calls"] = [{"type": "function", "id": c.id, "function": {
                    "name": c.name, "arguments": c.input}} for c in calls]
                return turn
        content = f"{THINK_OPEN}{thinking}{THINK_CLOSE}" if thinking and \
            not self.profile.native_reasoning else ""
        content += text
        for call in calls:
            body = dumps({"name": call.name, "arguments": call.input})
            content += f"\n{CALL_OPEN}\n{body}\n{CALL_CLOSE}"
        turn["content"] = content.lstrip("\n") if not text and not thinking else content
        return turn

    def _tools_changed(self, part: ToolsChangedPart) -> list[str]:
        """What the model reads where the conversation adds or removes tools: an added
        tool is written as the tool list at the top writes it."""
        texts: list[str] = []
        if not self.tool_changes:
            return texts
        if part.added:
            added = list(part.added)
            lines = "\n".join(dumps(t) for t in template_tools(added)) \
                if self.profile.native_tools else tool_lines(added)
            texts.append(TOOLS_ADDED.format(tools=lines))
        if part.removed:
            texts.append(TOOLS_REMOVED.format(names=", ".join(part.removed)))
        return texts

    def _user(self, message: Message) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        pending: list[str] = []
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                if self.profile.native_tools:
                    turns.append({"role": "tool", "tool_call_id": part.call_id,
                                  "content": _result_text(part)})
                else:
                    pending.append(f"<tool_response>\n{_result_text(part)}\n</tool_response>")
            elif isinstance(part, TextPart):
                pending.append(part.text)
            elif isinstance(part, ToolsChangedPart):
                pending.extend(self._tools_changed(part))
            elif isinstance(part, RedactedThinkingPart):
                continue
        if pending:
            turns.append({"role": "user", "content": "\n".join(pending)})
        return turns


def _result_text(part: ToolResultPart) -> str:
    return f"Error: {part.content}" if part.is_error else part.content
