"""Anthropic Messages requests into the neutral core.

Decoding is validating: the body is validated as its wire model (``wire/params.py``),
which refuses unknown and refused fields and kinds by their paths and wrong types with
pydantic's wording; the typed model is then translated into a neutral ``ChatRequest``,
checking what the types cannot say (non-empty text, which role may carry which block,
unique tool names, thinking budgets, tool_use/tool_result pairing) at exact paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..core import (
    CacheCheck,
    ChatRequest,
    JsonObject,
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
from ..errors import InvalidRequest
from ..wire import decode
from .validate import check_tool_pairing, invalid
from .wire.content import (
    AssistantMessageParam,
    ContentBlockParam,
    MessageContentParam,
    SystemMessageParam,
    SystemParam,
    TextBlockParam,
    ThinkingBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    UserMessageParam,
)
from .wire.kinds import TABLES
from .wire.params import (
    Effort,
    MessageCountTokensParams,
    MessageCreateParams,
    PromptParams,
    ThinkingConfigDisabledParam,
    ThinkingConfigEnabledParam,
)
from .wire.tools import ToolChoiceNoneParam, ToolChoiceParam, ToolChoiceToolParam, ToolParam

SYSTEM_ROLE_MESSAGE = (
    'Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
    'not "system" as an input message role.'
)
BILLING_HEADER = "x-anthropic-billing-header:"
EFFORT_BUDGETS: dict[Effort, int] = {"low": 512, "medium": 1024, "high": 2048, "xhigh": 4096,
                                     "max": 8192}
T = TypeVar("T")


def decode_messages_request(body: Mapping[str, Any]) -> tuple[ChatRequest, bool]:
    """The neutral request and whether the caller asked for a stream."""
    params = decode(MessageCreateParams, body, TABLES)
    request = _prompt(params)
    request.max_tokens = params.max_tokens
    request.sampling = Sampling(temperature=_or(params.temperature, 1.0),
                                top_p=_or(params.top_p, 1.0), top_k=_or(params.top_k, 0))
    request.stop = list(params.stop_sequences or [])
    request.thinking = _thinking(params, params.max_tokens)
    _check_thinking_rules(request, params.temperature is not None)
    if params.diagnostics is not None:
        request.cache_check = CacheCheck(params.diagnostics.previous_message_id)
    return request, bool(params.stream)


def decode_count_tokens_request(body: Mapping[str, Any]) -> ChatRequest:
    params = decode(MessageCountTokensParams, body, TABLES)
    request = _prompt(params)
    request.thinking = _thinking(params, None)
    return request


def _prompt(params: PromptParams) -> ChatRequest:
    """What both routes read: the conversation, the system prompt, tools, output format."""
    messages = _messages(params.messages)
    tools = _tools(params.tools or [])
    request = ChatRequest(model=params.model, messages=messages, system=_system(params.system),
                          tools=tools, tool_choice=_tool_choice(params.tool_choice, tools))
    request.response_schema = _output_schema(params)
    return request


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


# ---- messages ------------------------------------------------------------------------


def _messages(items: list[UserMessageParam | AssistantMessageParam | SystemMessageParam],
              ) -> list[Message]:
    if not items:
        raise invalid("messages", "at least one message is required")
    messages = [_message(item, f"messages[{i}]") for i, item in enumerate(items)]
    check_tool_pairing(messages)
    return messages


def _message(item: UserMessageParam | AssistantMessageParam | SystemMessageParam,
             path: str) -> Message:
    if isinstance(item, SystemMessageParam):
        raise InvalidRequest(SYSTEM_ROLE_MESSAGE, param=f"{path}.role")
    return Message(item.role, _content(item.content, f"{path}.content", item.role))


def _content(content: MessageContentParam, path: str, role: str) -> list[Part]:
    if isinstance(content, str):
        if not content and role != "assistant":
            raise invalid(path, "text content blocks must be non-empty")
        return [TextPart(content)]
    return [_part(block, f"{path}[{i}]", role) for i, block in enumerate(content)]


_ROLE_OF_BLOCK = {"tool_use": "assistant", "thinking": "assistant",
                  "redacted_thinking": "assistant", "tool_result": "user"}


def _part(block: ContentBlockParam, path: str, role: str) -> Part:
    expected = _ROLE_OF_BLOCK.get(block.type)
    if expected is not None and expected != role:
        raise invalid(path, f"`{block.type}` blocks can only be in `{expected}` messages")
    if isinstance(block, TextBlockParam):
        return _text(block, path)
    if isinstance(block, ToolUseBlockParam):
        return ToolCallPart(block.id, block.name, dict(block.input))
    if isinstance(block, ToolResultBlockParam):
        return _tool_result(block, path)
    if isinstance(block, ThinkingBlockParam):
        return ThinkingPart(block.thinking, block.signature)
    return RedactedThinkingPart(block.data)


def _text(block: TextBlockParam, path: str) -> TextPart:
    if not block.text:
        raise invalid(f"{path}.text", "text content blocks must be non-empty")
    return TextPart(block.text)


def _tool_result(block: ToolResultBlockParam, path: str) -> ToolResultPart:
    content = block.content
    if not isinstance(content, list):
        return ToolResultPart(block.tool_use_id, content or "", bool(block.is_error))
    texts = [_text(item, f"{path}.content[{i}]").text for i, item in enumerate(content)]
    return ToolResultPart(block.tool_use_id, "\n".join(texts), bool(block.is_error))


def _system(system: SystemParam | None) -> str | None:
    """The system prompt, without Claude Code's per-request billing block."""
    if system is None or isinstance(system, str):
        return system
    texts = [_text(block, f"system[{i}]").text for i, block in enumerate(system)]
    kept = [text for text in texts if not text.startswith(BILLING_HEADER)]
    return "\n".join(kept) if kept else None


# ---- tools ---------------------------------------------------------------------------


def _tools(items: list[ToolParam]) -> list[Tool]:
    tools: list[Tool] = []
    for i, item in enumerate(items):
        if item.input_schema.get("type") != "object":
            raise invalid(f"tools[{i}].input_schema.type", "Input should be 'object'")
        if item.name in {tool.name for tool in tools}:
            raise invalid(f"tools[{i}].name", f"tool names must be unique; {item.name!r} "
                          "appears twice")
        tools.append(Tool(item.name, item.description, dict(item.input_schema)))
    return tools


_MODES: dict[str, ToolMode] = {"auto": "auto", "any": "required", "tool": "named", "none": "none"}


def _tool_choice(choice: ToolChoiceParam | None, tools: list[Tool]) -> ToolChoice:
    if choice is None:
        return ToolChoice()
    if choice.type in ("any", "tool") and not tools:
        raise invalid("tool_choice", f"tool_choice.type {choice.type!r} needs `tools`")
    name = choice.name if isinstance(choice, ToolChoiceToolParam) else None
    if name is not None and name not in {t.name for t in tools}:
        raise invalid("tool_choice.name", f"no tool named {name!r} in `tools`")
    parallel = isinstance(choice, ToolChoiceNoneParam) or not choice.disable_parallel_tool_use
    return ToolChoice(_MODES[choice.type], name, parallel)


# ---- thinking and output -------------------------------------------------------------


def _thinking(params: PromptParams, max_tokens: int | None) -> Thinking | None:
    """The reasoning asked for: an explicit budget, or adaptive with the budget of the
    effort asked for (at most half of ``max_tokens``)."""
    config = params.thinking
    if config is None or isinstance(config, ThinkingConfigDisabledParam):
        return None
    display = config.display or "summarized"
    if isinstance(config, ThinkingConfigEnabledParam):
        if max_tokens is not None and config.budget_tokens >= max_tokens:
            raise invalid("thinking.budget_tokens", "`max_tokens` must be greater than "
                          "`thinking.budget_tokens`")
        return Thinking(config.budget_tokens, display)
    effort = params.output_config.effort if params.output_config is not None else None
    budget = EFFORT_BUDGETS[effort or "high"]
    if max_tokens is not None:
        budget = max(1, min(budget, max_tokens // 2))
    return Thinking(budget, display, adaptive=True)


def _output_schema(params: PromptParams) -> JsonObject | None:
    config = params.output_config
    fmt = (config.format if config is not None else None) or params.output_format
    return dict(fmt.schema_) if fmt is not None else None


def _check_thinking_rules(request: ChatRequest, temperature_given: bool) -> None:
    if request.thinking is None:
        return
    if request.tool_choice.mode in ("required", "named"):
        raise invalid("thinking", "Thinking may not be enabled when tool_choice forces tool "
                      "use.")
    if temperature_given and request.sampling.temperature != 1.0:
        raise invalid("temperature", "`temperature` may only be set to 1 when thinking is "
                      "enabled.")
