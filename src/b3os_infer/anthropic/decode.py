"""Anthropic Messages requests into the neutral core, under the field policy table.

Every key is looked up in ``policy.py``: read and honoured, accepted and ignored, or
refused with ``unsupported_parameter`` naming its path. Unknown keys are refused too.
"""

from __future__ import annotations

import re
from typing import Any

from ..core import (
    ChatRequest,
    Message,
    Part,
    RedactedThinkingPart,
    Sampling,
    TextPart,
    Thinking,
    ThinkingPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolMode,
    ToolResultPart,
)
from ..errors import InvalidRequest, UnsupportedParameter
from ..fields import Fields, invalid, join
from ..policy import check_kind, table_fields
from . import policy
from .validate import check_tool_pairing

SYSTEM_ROLE_MESSAGE = (
    'Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
    'not "system" as an input message role.'
)
BILLING_HEADER = "x-anthropic-billing-header:"
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
EFFORT_BUDGETS = {"low": 512, "medium": 1024, "high": 2048, "xhigh": 4096, "max": 8192}


def decode_messages_request(body: dict[str, Any]) -> tuple[ChatRequest, bool]:
    """The neutral request and whether the caller asked for a stream."""
    fields = table_fields(body, policy.MESSAGES_FIELDS)
    model = fields.take("model", str, required=True)
    max_tokens = fields.integer("max_tokens", low=1, required=True) or 1
    stream = bool(fields.take("stream", bool))
    sampling = Sampling(
        temperature=_or(fields.number("temperature", low=0.0, high=1.0), 1.0),
        top_p=_or(fields.number("top_p", low=0.0, high=1.0), 1.0),
        top_k=_or(fields.integer("top_k", low=0), 0),
    )
    request = _common(fields, model)
    request.max_tokens = max_tokens
    request.sampling = sampling
    request.stop = _stop_sequences(fields)
    request.thinking = _thinking(fields, max_tokens)
    fields.finish()
    _check_thinking_rules(request, "temperature" in body)
    return request, stream


def decode_count_tokens_request(body: dict[str, Any]) -> ChatRequest:
    fields = table_fields(body, policy.COUNT_TOKENS_FIELDS)
    model = fields.take("model", str, required=True)
    request = _common(fields, model)
    request.thinking = _thinking(fields, None)
    fields.finish()
    return request


def _common(fields: Fields, model: str) -> ChatRequest:
    messages = _messages(fields)
    tools = _tools(fields)
    request = ChatRequest(model=model, messages=messages, system=_system(fields), tools=tools,
                          tool_choice=_tool_choice(fields, tools))
    request.response_schema = _output_format(fields)
    return request


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


# ---- messages ------------------------------------------------------------------------


def _messages(fields: Fields) -> list[Message]:
    items = fields.take("messages", list, required=True)
    if not items:
        raise invalid("messages", "at least one message is required")
    messages = [_message(item, join("messages", i)) for i, item in enumerate(items)]
    check_tool_pairing(messages)
    return messages


def _message(item: Any, path: str) -> Message:
    fields = Fields(item, path)
    role = fields.take("role", str, required=True)
    if role == "system":
        raise InvalidRequest(SYSTEM_ROLE_MESSAGE, param=join(path, "role"))
    if role not in ("user", "assistant"):
        raise invalid(join(path, "role"), "Input should be 'user' or 'assistant'")
    content = fields.raw("content")
    if content is None:
        raise invalid(join(path, "content"), "Field required")
    fields.finish()
    return Message(role, _content(content, join(path, "content"), role))


def _content(content: Any, path: str, role: str) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content or role == "assistant" else \
            _raise(invalid(path, "text content blocks must be non-empty"))
    if not isinstance(content, list):
        raise invalid(path, "Input should be a string or an array of content blocks")
    return [_block(block, join(path, i), role) for i, block in enumerate(content)]


def _raise(error: Exception) -> Any:
    raise error


_ROLE_OF_BLOCK = {"tool_use": "assistant", "thinking": "assistant",
                  "redacted_thinking": "assistant", "tool_result": "user"}


def _block(block: Any, path: str, role: str) -> Part:
    if not isinstance(block, dict):
        raise invalid(path, "Input should be an object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise invalid(join(path, "type"), "Field required")
    check_kind(policy.CONTENT_BLOCKS, kind, path, "content block")
    expected = _ROLE_OF_BLOCK.get(kind)
    if expected is not None and expected != role:
        raise invalid(path, f"`{kind}` blocks can only be in `{expected}` messages")
    return _BLOCK_READERS[kind](Fields(block, path, ignored=("cache_control",)))


def _text_block(fields: Fields) -> TextPart:
    fields.take("type", str)
    text = fields.take("text", str, required=True)
    if not text:
        raise invalid(fields.at("text"), "text content blocks must be non-empty")
    if fields.has("citations"):
        raise UnsupportedParameter(f"{fields.at('citations')}: citations are not supported "
                                   "here", param=fields.at("citations"))
    fields.raw("citations")
    fields.finish()
    return TextPart(text)


def _tool_use_block(fields: Fields) -> ToolCallPart:
    fields.take("type", str)
    part = ToolCallPart(fields.take("id", str, required=True),
                        fields.take("name", str, required=True),
                        fields.take("input", dict, required=True))
    fields.raw("caller")
    fields.finish()
    return part


def _tool_result_block(fields: Fields) -> ToolResultPart:
    fields.take("type", str)
    tool_use_id = fields.take("tool_use_id", str, required=True)
    is_error = bool(fields.take("is_error", bool))
    content = fields.raw("content")
    fields.finish()
    if content is None or isinstance(content, str):
        return ToolResultPart(tool_use_id, content or "", is_error)
    if not isinstance(content, list):
        raise invalid(fields.at("content"), "Input should be a string or an array of blocks")
    texts = []
    for i, block in enumerate(content):
        path = join(fields.at("content"), i)
        part = _block(block, path, "user")
        if not isinstance(part, TextPart):
            raise UnsupportedParameter(f"{path}: only text blocks are supported inside "
                                       "`tool_result` here", param=path)
        texts.append(part.text)
    return ToolResultPart(tool_use_id, "\n".join(texts), is_error)


def _thinking_block(fields: Fields) -> ThinkingPart:
    fields.take("type", str)
    thinking = fields.take("thinking", str, required=True)
    signature = fields.take("signature", str, required=True)
    fields.finish()
    return ThinkingPart(thinking, signature)


def _redacted_block(fields: Fields) -> RedactedThinkingPart:
    fields.take("type", str)
    data = fields.take("data", str, required=True)
    fields.finish()
    return RedactedThinkingPart(data)


_BLOCK_READERS: dict[str, Any] = {
    "text": _text_block, "tool_use": _tool_use_block, "tool_result": _tool_result_block,
    "thinking": _thinking_block, "redacted_thinking": _redacted_block,
}


def _system(fields: Fields) -> str | None:
    system = fields.raw("system")
    if system is None or isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise invalid("system", "Input should be a string or an array of text blocks")
    texts = []
    for i, block in enumerate(system):
        part = _block(block, join("system", i), "system")
        if not isinstance(part, TextPart):
            raise invalid(join("system", i), "only text blocks are allowed in `system`")
        if not part.text.startswith(BILLING_HEADER):
            texts.append(part.text)
    return "\n".join(texts) if texts else None


def _stop_sequences(fields: Fields) -> list[str]:
    stops = fields.take("stop_sequences", list) or []
    for i, stop in enumerate(stops):
        if not isinstance(stop, str) or not stop:
            raise invalid(join("stop_sequences", i), "Input should be a non-empty string")
    return list(stops)


# ---- tools ---------------------------------------------------------------------------


def _tools(fields: Fields) -> list[Tool]:
    items = fields.take("tools", list) or []
    tools = [_tool(item, join("tools", i)) for i, item in enumerate(items)]
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise invalid(join(join("tools", i), "name"), f"tool names must be unique; "
                          f"{tool.name!r} appears twice")
        seen.add(tool.name)
    return tools


def _tool(item: Any, path: str) -> Tool:
    fields = Fields(item, path, ignored=policy.names(policy.TOOL_FIELDS, "ignored"))
    kind = fields.take("type", str) or "custom"
    check_kind(policy.TOOL_TYPES, kind, path, "tool")
    name = fields.take("name", str, required=True)
    if not _TOOL_NAME.match(name):
        raise invalid(join(path, "name"), "String should match pattern "
                      "'^[a-zA-Z0-9_-]{1,128}$'")
    schema = fields.take("input_schema", dict, required=True)
    if schema.get("type") != "object":
        raise invalid(join(path, "input_schema.type"), "Input should be 'object'")
    description = fields.take("description", str)
    fields.take("strict", bool)
    fields.finish()
    return Tool(name, description, schema)


_MODES: dict[str, ToolMode] = {"auto": "auto", "any": "required", "tool": "named", "none": "none"}


def _tool_choice(fields: Fields, tools: list[Tool]) -> ToolChoice:
    raw = fields.take("tool_choice", dict)
    if raw is None:
        return ToolChoice()
    choice = Fields(raw, "tool_choice")
    mode = choice.take("type", str, required=True)
    if mode not in ("auto", "any", "tool", "none"):
        raise invalid("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'")
    name = choice.take("name", str, required=mode == "tool") if mode == "tool" else None
    parallel = not choice.take("disable_parallel_tool_use", bool) if mode != "none" else True
    choice.finish()
    if mode in ("any", "tool") and not tools:
        raise invalid("tool_choice", f"tool_choice.type {mode!r} needs `tools`")
    if name is not None and name not in {t.name for t in tools}:
        raise invalid("tool_choice.name", f"no tool named {name!r} in `tools`")
    return ToolChoice(_MODES[mode], name, parallel)


# ---- thinking and output -------------------------------------------------------------


def _thinking(fields: Fields, max_tokens: int | None) -> Thinking | None:
    effort = _effort(fields)
    raw = fields.take("thinking", dict)
    if raw is None:
        return None
    thinking = Fields(raw, "thinking")
    kind = thinking.take("type", str, required=True)
    display = thinking.take("display", str) or "summarized"
    if display not in ("summarized", "omitted"):
        raise invalid("thinking.display", "Input should be 'summarized' or 'omitted'")
    if kind == "disabled":
        thinking.finish()
        return None
    if kind == "enabled":
        budget = thinking.integer("budget_tokens", low=1024, required=True) or 1024
        thinking.finish()
        if max_tokens is not None and budget >= max_tokens:
            raise invalid("thinking.budget_tokens", "`max_tokens` must be greater than "
                          "`thinking.budget_tokens`")
        return Thinking(budget, display)  # type: ignore[arg-type]
    if kind == "adaptive":
        thinking.finish()
        budget = EFFORT_BUDGETS[effort or "high"]
        if max_tokens is not None:
            budget = max(1, min(budget, max_tokens // 2))
        return Thinking(budget, display)  # type: ignore[arg-type]
    raise invalid("thinking.type", "Input should be 'enabled', 'adaptive' or 'disabled'")


def _effort(fields: Fields) -> str | None:
    raw = fields.data.get("output_config")
    if not isinstance(raw, dict):
        return None
    effort = raw.get("effort")
    if effort is not None and effort not in EFFORT_BUDGETS:
        raise invalid("output_config.effort",
                      f"Input should be one of {', '.join(map(repr, EFFORT_BUDGETS))}")
    return effort


def _output_format(fields: Fields) -> dict[str, Any] | None:
    schema = None
    raw = fields.take("output_config", dict)
    if raw is not None:
        config = Fields(raw, "output_config", ignored=("task_budget",))
        config.take("effort", str)
        schema = _format(config.take("format", dict), "output_config.format")
        config.finish()
    legacy = _format(fields.take("output_format", dict), "output_format")
    return schema or legacy


def _format(raw: dict[str, Any] | None, path: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    fmt = Fields(raw, path)
    kind = fmt.take("type", str, required=True)
    if kind != "json_schema":
        raise invalid(join(path, "type"), "Input should be 'json_schema'")
    schema = fmt.take("schema", dict, required=True)
    fmt.finish()
    return schema


def _check_thinking_rules(request: ChatRequest, temperature_given: bool) -> None:
    if request.thinking is None:
        return
    if request.tool_choice.mode in ("required", "named"):
        raise invalid("thinking", "Thinking may not be enabled when tool_choice forces tool "
                      "use.")
    if temperature_given and request.sampling.temperature != 1.0:
        raise invalid("temperature", "`temperature` may only be set to 1 when thinking is "
                      "enabled.")
