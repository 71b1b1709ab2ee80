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
    ClearThinking,
    ClearToolUses,
    ContextEdit,
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
    ToolsChangedPart,
)
from ..errors import InvalidRequest
from ..node.server_tools.functions import function_of
from ..wire_models import decode
from .server_blocks import call_part, result_part
from .server_tool_params import split_tools
from .toolset import ToolSet
from .validate import check_tool_pairing, invalid
from .wire.content import (
    AssistantMessageParam,
    ContentBlockParam,
    MessageContentParam,
    RedactedThinkingBlockParam,
    SystemMessageParam,
    SystemParam,
    TextBlockParam,
    ThinkingBlockParam,
    ToolAdditionBlockParam,
    ToolChangeToolReference,
    ToolReferenceBlockParam,
    ToolRemovalBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    UserMessageParam,
)
from .wire.kinds import TABLES
from .wire.params import (
    ClearThinkingEditParam,
    ClearToolUsesEditParam,
    ContextManagementParam,
    Effort,
    InputTokensParam,
    MessageCountTokensParams,
    MessageCreateParams,
    PromptParams,
    ThinkingConfigDisabledParam,
    ThinkingConfigEnabledParam,
    ThinkingTurnsParam,
    ToolUsesParam,
)
from .wire.server_tools import (
    ServerToolUseBlockParam,
    WebFetchToolResultBlockParam,
    WebSearchToolResultBlockParam,
)
from .wire.tools import ToolChoiceNoneParam, ToolChoiceParam, ToolChoiceToolParam

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
    custom, server = split_tools(params.tools or [])
    tools = ToolSet(custom)
    functions = [function_of(tool) for tool in server]
    messages = _messages(params.messages, tools)
    choice = _tool_choice(params.tool_choice, tools.callable_tools() + functions)
    request = ChatRequest(model=params.model, messages=messages, system=_system(params.system),
                          tools=tools.final() + functions, tool_choice=choice,
                          server_tools=server)
    request.response_schema = _output_schema(params)
    request.context_edits = context_edits(params.context_management)
    return request


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


# ---- messages ------------------------------------------------------------------------


def _messages(items: list[UserMessageParam | AssistantMessageParam | SystemMessageParam],
              tools: ToolSet) -> list[Message]:
    if not items:
        raise invalid("messages", "at least one message is required")
    messages = [_message(item, f"messages[{i}]", tools) for i, item in enumerate(items)]
    check_tool_pairing(messages)
    return messages


def _message(item: UserMessageParam | AssistantMessageParam | SystemMessageParam,
             path: str, tools: ToolSet) -> Message:
    if isinstance(item, SystemMessageParam):
        raise InvalidRequest(SYSTEM_ROLE_MESSAGE, param=f"{path}.role")
    return Message(item.role, _content(item.content, f"{path}.content", item.role, tools))


def _content(content: MessageContentParam, path: str, role: str,
             tools: ToolSet) -> list[Part]:
    if isinstance(content, str):
        if not content and role != "assistant":
            raise invalid(path, "text content blocks must be non-empty")
        return [TextPart(content)]
    parts: list[Part] = []
    calls: dict[str, JsonObject] = {}   # server tool calls so far, for their results
    for i, block in enumerate(content):
        parts.extend(_parts(block, f"{path}[{i}]", role, tools, calls))
    return parts


ServerBlockParam = (ServerToolUseBlockParam | WebSearchToolResultBlockParam
                    | WebFetchToolResultBlockParam)


def _server_part(block: ServerBlockParam, path: str, calls: dict[str, JsonObject]) -> Part:
    """A server tool's call or result sent back (assistant turns), a result after its
    call."""
    if isinstance(block, ServerToolUseBlockParam):
        calls[block.id] = dict(block.input)
        return call_part(block)
    if block.tool_use_id not in calls:
        raise invalid(f"{path}.tool_use_id", f"no `server_tool_use` block with id "
                      f"{block.tool_use_id!r} before this result")
    return result_part(block, calls)


_ROLE_OF_BLOCK = {"tool_use": "assistant", "thinking": "assistant",
                  "redacted_thinking": "assistant", "tool_result": "user",
                  "tool_addition": "user", "tool_removal": "user",
                  "server_tool_use": "assistant", "web_search_tool_result": "assistant",
                  "web_fetch_tool_result": "assistant"}


def _parts(block: ContentBlockParam, path: str, role: str, tools: ToolSet,
           calls: dict[str, JsonObject]) -> list[Part]:
    expected = _ROLE_OF_BLOCK.get(block.type)
    if expected is not None and expected != role:
        raise invalid(path, f"`{block.type}` blocks can only be in `{expected}` messages")
    if isinstance(block, ServerBlockParam):
        return [_server_part(block, path, calls)]
    if isinstance(block, ToolResultBlockParam):
        return _tool_result(block, path, tools)
    if isinstance(block, ToolAdditionBlockParam):
        return _tool_addition(block, f"{path}.tool", tools)
    if isinstance(block, ToolRemovalBlockParam):
        name = tools.remove(block.tool.name, f"{path}.tool.name")
        return [ToolsChangedPart(removed=(name,))]
    return [_part(block, path)]


def _part(block: TextBlockParam | ToolUseBlockParam | ThinkingBlockParam
          | RedactedThinkingBlockParam, path: str) -> Part:
    if isinstance(block, TextBlockParam):
        return _text(block, path)
    if isinstance(block, ToolUseBlockParam):
        return ToolCallPart(block.id, block.name, dict(block.input))
    if isinstance(block, ThinkingBlockParam):
        return ThinkingPart(block.thinking, block.signature)
    return RedactedThinkingPart(block.data)


def _tool_addition(block: ToolAdditionBlockParam, path: str, tools: ToolSet) -> list[Part]:
    target = block.tool
    if isinstance(target, ToolChangeToolReference):
        loaded = tools.load(target.name, f"{path}.name")
        return [ToolsChangedPart(added=(loaded,))] if loaded is not None else []
    return [ToolsChangedPart(added=(tools.define(target.definition, f"{path}.definition"),))]


def _text(block: TextBlockParam, path: str) -> TextPart:
    if not block.text:
        raise invalid(f"{path}.text", "text content blocks must be non-empty")
    return TextPart(block.text)


def _tool_result(block: ToolResultBlockParam, path: str, tools: ToolSet) -> list[Part]:
    """The result, then the deferred tools its ``tool_reference`` blocks load."""
    content = block.content
    if not isinstance(content, list):
        return [ToolResultPart(block.tool_use_id, content or "", bool(block.is_error))]
    texts: list[str] = []
    loaded: list[Tool] = []
    for i, item in enumerate(content):
        at = f"{path}.content[{i}]"
        if isinstance(item, ToolReferenceBlockParam):
            tool = tools.load(item.tool_name, f"{at}.tool_name")
            if tool is not None:
                loaded.append(tool)
        else:
            texts.append(_text(item, at).text)
    result = ToolResultPart(block.tool_use_id, "\n".join(texts), bool(block.is_error))
    return [result, ToolsChangedPart(added=tuple(loaded))] if loaded else [result]


def _system(system: SystemParam | None) -> str | None:
    """The system prompt, without Claude Code's per-request billing block."""
    if system is None or isinstance(system, str):
        return system
    texts = [_text(block, f"system[{i}]").text for i, block in enumerate(system)]
    kept = [text for text in texts if not text.startswith(BILLING_HEADER)]
    return "\n".join(kept) if kept else None


# ---- tools ---------------------------------------------------------------------------


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


# ---- context editing ----------------------------------------------------------------


def context_edits(config: ContextManagementParam | None) -> tuple[ContextEdit, ...] | None:
    """The edits asked for, with the real API's defaults; None when none were asked."""
    if config is None:
        return None
    return tuple(_clear_tool_uses(edit) if isinstance(edit, ClearToolUsesEditParam)
                 else _clear_thinking(edit) for edit in config.edits or [])


def _clear_tool_uses(edit: ClearToolUsesEditParam) -> ClearToolUses:
    tokens, uses = _trigger(edit.trigger)
    inputs = edit.clear_tool_inputs
    return ClearToolUses(
        trigger_tokens=tokens, trigger_tool_uses=uses,
        keep=edit.keep.value if edit.keep is not None else 3,
        clear_at_least=edit.clear_at_least.value if edit.clear_at_least is not None else 0,
        exclude=frozenset(edit.exclude_tools or ()),
        clear_inputs=frozenset(inputs) if isinstance(inputs, list) else bool(inputs))


def _trigger(trigger: InputTokensParam | ToolUsesParam | None) -> tuple[int | None, int | None]:
    """(prompt tokens, tool uses): the one the edit waits for; 100,000 tokens by default."""
    if trigger is None:
        return 100_000, None
    if isinstance(trigger, ToolUsesParam):
        return None, trigger.value
    return trigger.value, None


def _clear_thinking(edit: ClearThinkingEditParam) -> ClearThinking:
    keep = edit.keep
    if keep is None:
        return ClearThinking()
    return ClearThinking(keep.value if isinstance(keep, ThinkingTurnsParam) else None)


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
