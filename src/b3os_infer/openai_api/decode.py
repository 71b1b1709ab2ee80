"""OpenAI chat completion requests into the neutral core, under the field policy table.

Every key is looked up in ``policy.py``: read and honoured, accepted and ignored, or
refused with ``unsupported_parameter`` naming its path; unknown keys are refused too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..core import (
    ChatRequest,
    Message,
    Part,
    TextPart,
    Thinking,
    ThinkingPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    merge_turns,
)
from ..errors import UnsupportedParameter
from ..fields import Fields, invalid, join
from ..policy import check_kind, table_fields
from . import policy
from .sampling import sampling_fields, stops

DEFAULT_MAX_TOKENS = 1024
MAX_CHOICES = 8
EFFORT_BUDGETS = {"minimal": 256, "low": 512, "medium": 1024, "high": 2048, "xhigh": 4096}
_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ROLES = {"system": "system", "developer": "system", "user": "user",
          "assistant": "assistant", "tool": "user"}


@dataclass(frozen=True)
class ChatOptions:
    """What shapes the response rather than the generation."""

    stream: bool
    include_usage: bool
    n: int
    logprobs: bool


def decode_chat_request(body: dict[str, Any]) -> tuple[ChatRequest, ChatOptions]:
    fields = table_fields(body, policy.CHAT_FIELDS)
    model = fields.take("model", str, required=True)
    system, messages = _split_system(_messages(fields))
    newer, older = fields.integer("max_completion_tokens", low=1), \
        fields.integer("max_tokens", low=1)
    max_tokens = newer or older or DEFAULT_MAX_TOKENS
    sampling = sampling_fields(fields)
    n = fields.integer("n", low=1, high=MAX_CHOICES) or 1
    logprobs = bool(fields.take("logprobs", bool))
    top = fields.integer("top_logprobs", low=0, high=20)
    if top is not None and not logprobs:
        raise invalid("top_logprobs", "`logprobs` must be true when `top_logprobs` is set")
    tools = _tools(fields)
    request = ChatRequest(
        model=model, messages=messages, system=system, max_tokens=max_tokens,
        stop=stops(fields), sampling=sampling, tools=tools,
        tool_choice=_tool_choice(fields, tools),
        thinking=_reasoning(fields, max_tokens),
        response_schema=_response_format(fields),
        top_logprobs=(top or 0) if logprobs else None)
    options = ChatOptions(*stream_options(fields), n=n, logprobs=logprobs)
    fields.finish()
    return request, options


def stream_options(fields: Fields) -> tuple[bool, bool]:
    stream = bool(fields.take("stream", bool))
    raw = fields.take("stream_options", dict)
    include_usage = False
    if raw is not None:
        options = Fields(raw, "stream_options", ignored=("include_obfuscation",))
        include_usage = bool(options.take("include_usage", bool))
        options.finish()
    return stream, include_usage


# ---- messages ------------------------------------------------------------------------


def _messages(fields: Fields) -> list[Message]:
    items = fields.take("messages", list, required=True)
    if not items:
        raise invalid("messages", "at least one message is required")
    messages = [_message(item, join("messages", i)) for i, item in enumerate(items)]
    _check_tool_answers(messages)
    return messages


def _message(item: Any, path: str) -> Message:
    fields = table_fields(item, policy.MESSAGE_FIELDS, path)
    role = fields.take("role", str, required=True)
    if role not in _ROLES:
        raise invalid(join(path, "role"), "Input should be 'system', 'developer', 'user', "
                      "'assistant' or 'tool'")
    content = fields.raw("content")
    if role == "assistant":
        parts = _assistant_parts(fields, content, path)
    elif role == "tool":
        call_id = fields.take("tool_call_id", str, required=True)
        parts = [ToolResultPart(call_id, _text(content, join(path, "content")))]
    else:
        if content is None:
            raise invalid(join(path, "content"), "Field required")
        parts = [TextPart(_text(content, join(path, "content")))]
    fields.finish()
    return Message(_ROLES[role], parts)  # type: ignore[arg-type]


def _assistant_parts(fields: Fields, content: Any, path: str) -> list[Part]:
    parts: list[Part] = []
    content_spelling, short_spelling = fields.take("reasoning_content", str), \
        fields.take("reasoning", str)
    reasoning = content_spelling or short_spelling
    if reasoning:
        parts.append(ThinkingPart(reasoning))
    text = _text(content, join(path, "content")) if content is not None else ""
    if text:
        parts.append(TextPart(text))
    calls = fields.take("tool_calls", list) or []
    parts += [_tool_call(call, join(join(path, "tool_calls"), i)) for i, call in
              enumerate(calls)]
    if content is None and not calls:
        raise invalid(join(path, "content"), "an assistant message needs `content` or "
                      "`tool_calls`")
    return parts


def _tool_call(item: Any, path: str) -> ToolCallPart:
    call = Fields(item, path)
    call_id = call.take("id", str, required=True)
    kind = call.take("type", str) or "function"
    if kind != "function":
        raise UnsupportedParameter(f"{join(path, 'type')}: only `function` tool calls are "
                                   "served", param=join(path, "type"))
    function = Fields(call.take("function", dict, required=True), join(path, "function"))
    name = function.take("name", str, required=True)
    arguments = function.take("arguments", str, required=True)
    function.finish()
    call.finish()
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise invalid(join(path, "function.arguments"), "Input should be a JSON object "
                      "encoded as a string")
    return ToolCallPart(call_id, name, value)


def _text(content: Any, path: str) -> str:
    """A string, or text parts joined; other part types are refused by the policy."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(path, "Input should be a string or an array of content parts")
    texts = []
    for i, item in enumerate(content):
        part = Fields(item, join(path, i))
        kind = part.take("type", str, required=True)
        check_kind(policy.CONTENT_PARTS, kind, join(path, i), "content part")
        if kind == "refusal":
            part.take("refusal", str)
        else:
            texts.append(part.take("text", str, required=True))
        part.finish()
    return "".join(texts)


def _check_tool_answers(messages: list[Message]) -> None:
    """OpenAI's rule: an assistant's ``tool_calls`` are answered by the next ``tool``
    messages, one per call, and a ``tool`` message answers such a call."""
    pending: list[str] = []
    for index, message in enumerate(messages):
        results = [p for p in message.parts if isinstance(p, ToolResultPart)]
        if results:
            for part in results:
                if part.call_id not in pending:
                    raise invalid(f"messages[{index}]", "Invalid parameter: messages with role "
                                  "'tool' must be a response to a preceding message with "
                                  "'tool_calls'.")
                pending.remove(part.call_id)
            continue
        if pending:
            raise invalid(f"messages[{index - 1}]", "An assistant message with 'tool_calls' "
                          "must be followed by tool messages responding to each "
                          "'tool_call_id'. The following tool_call_ids did not have response "
                          f"messages: {', '.join(pending)}")
        pending = [p.id for p in message.parts if isinstance(p, ToolCallPart)]


def _split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """Leading system/developer messages become the system prompt."""
    system: list[str] = []
    index = 0
    while index < len(messages) and messages[index].role == "system":
        system.append(messages[index].text)
        index += 1
    rest = messages[index:]
    for offset, message in enumerate(rest):
        if message.role == "system":
            raise UnsupportedParameter(
                f"messages[{index + offset}]: system and developer messages are served only "
                "at the start of the conversation", param=f"messages[{index + offset}]")
    if not rest:
        raise invalid("messages", "at least one user or assistant message is required")
    return ("\n\n".join(system) if system else None), merge_turns(rest)


# ---- tools, reasoning, output format -------------------------------------------------


def _tools(fields: Fields) -> list[Tool]:
    items = fields.take("tools", list) or []
    tools = [_tool(item, join("tools", i)) for i, item in enumerate(items)]
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise invalid(join(join("tools", i), "function.name"),
                          f"duplicate function name {tool.name!r}")
        seen.add(tool.name)
    return tools


def _tool(item: Any, path: str) -> Tool:
    fields = Fields(item, path)
    kind = fields.take("type", str, required=True)
    check_kind(policy.TOOL_TYPES, kind, join(path, "type"), "tool")
    function = Fields(fields.take("function", dict, required=True), join(path, "function"))
    name = function.take("name", str, required=True)
    if not _FUNCTION_NAME.match(name):
        raise invalid(function.at("name"), "should be 1 to 64 letters, digits, '_' or '-'")
    description = function.take("description", str)
    schema = function.take("parameters", dict) or {"type": "object", "properties": {}}
    function.take("strict", bool)
    function.finish()
    fields.finish()
    return Tool(name, description, schema)


def _tool_choice(fields: Fields, tools: list[Tool]) -> ToolChoice:
    parallel = fields.take("parallel_tool_calls", bool)
    parallel = True if parallel is None else parallel
    raw = fields.raw("tool_choice")
    if raw is None:
        return ToolChoice("auto" if tools else "none", None, parallel)
    if isinstance(raw, str):
        modes = {"none": "none", "auto": "auto", "required": "required"}
        if raw not in modes:
            raise invalid("tool_choice", "Input should be 'none', 'auto', 'required' or a "
                          "named function")
        if raw == "required" and not tools:
            raise invalid("tool_choice", "'required' needs `tools`")
        return ToolChoice(modes[raw], None, parallel)  # type: ignore[arg-type]
    choice = Fields(raw, "tool_choice")
    kind = choice.take("type", str, required=True)
    if kind == "allowed_tools":
        raise UnsupportedParameter("tool_choice.type: allowed_tools is not served; name one "
                                   "function or use 'required'", param="tool_choice.type")
    if kind != "function":
        raise invalid("tool_choice.type", "Input should be 'function'")
    function = Fields(choice.take("function", dict, required=True), "tool_choice.function")
    name = function.take("name", str, required=True)
    function.finish()
    choice.finish()
    if name not in {t.name for t in tools}:
        raise invalid("tool_choice.function.name", f"no function named {name!r} in `tools`")
    return ToolChoice("named", name, parallel)


def _reasoning(fields: Fields, max_tokens: int) -> Thinking | None:
    effort = fields.take("reasoning_effort", str)
    if effort is None or effort == "none":
        return None
    if effort not in EFFORT_BUDGETS:
        raise invalid("reasoning_effort", "Input should be 'none', "
                      f"{', '.join(map(repr, EFFORT_BUDGETS))}")
    return Thinking(max(1, min(EFFORT_BUDGETS[effort], max_tokens // 2)))


def _response_format(fields: Fields) -> dict[str, Any] | None:
    raw = fields.take("response_format", dict)
    if raw is None:
        return None
    fmt = Fields(raw, "response_format")
    kind = fmt.take("type", str, required=True)
    schema: dict[str, Any] | None = None
    if kind == "json_object":
        schema = {"type": "object"}
    elif kind == "json_schema":
        spec = Fields(fmt.take("json_schema", dict, required=True), "response_format.json_schema")
        spec.take("name", str, required=True)
        spec.take("description", str)
        spec.take("strict", bool)
        schema = spec.take("schema", dict) or {"type": "object"}
        spec.finish()
    elif kind != "text":
        raise invalid("response_format.type", "Input should be 'text', 'json_object' or "
                      "'json_schema'")
    fmt.finish()
    return schema
