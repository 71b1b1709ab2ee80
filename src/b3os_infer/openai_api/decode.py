"""OpenAI chat completion requests into the neutral core.

The body is validated as ``ChatCompletionCreateParams`` (``wire/``): every field has its
policy there, and unknown or refused fields and kinds are refused naming their path.
What no type can say is checked here: system messages only at the start, tool messages
answering calls, unique tool names, arguments as a JSON object, ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core import (
    ChatRequest,
    JsonObject,
    Message,
    Part,
    Role,
    TextPart,
    Thinking,
    ThinkingPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    merge_turns,
)
from ..errors import InvalidRequest, UnsupportedParameter
from ..wire_models import decode
from .policy import CHAT_OUTPUT_CAP
from .sampling_fields import sampling_of
from .wire.chat import (
    ChatCompletionCreateParams,
    ResponseFormat,
    ResponseFormatJSONObject,
    ResponseFormatJSONSchema,
)
from .wire.common import stop_strings
from .wire.content import content_text
from .wire.kinds import TABLES
from .wire.messages import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from .wire.tools import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionToolChoiceOptionParam,
)

EFFORT_BUDGETS = {"minimal": 256, "low": 512, "medium": 1024, "high": 2048, "xhigh": 4096}


@dataclass(frozen=True)
class ChatOptions:
    """What shapes the response rather than the generation."""

    stream: bool
    include_usage: bool
    n: int
    logprobs: bool


def invalid(path: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{path}: {message}", param=path)


def decode_chat_request(body: Mapping[str, Any]) -> tuple[ChatRequest, ChatOptions]:
    params = decode(ChatCompletionCreateParams, body, TABLES)
    return chat_request(params), chat_options(params)


def chat_options(params: ChatCompletionCreateParams) -> ChatOptions:
    usage = params.stream_options is not None and bool(params.stream_options.include_usage)
    return ChatOptions(stream=bool(params.stream), include_usage=usage, n=params.n or 1,
                       logprobs=bool(params.logprobs))


def chat_request(params: ChatCompletionCreateParams) -> ChatRequest:
    system, messages = _split_system(_messages(params.messages))
    max_tokens = params.max_completion_tokens or params.max_tokens or CHAT_OUTPUT_CAP.default
    if params.top_logprobs is not None and not params.logprobs:
        raise invalid("top_logprobs", "`logprobs` must be true when `top_logprobs` is set")
    tools = _tools(params.tools or [])
    parallel = True if params.parallel_tool_calls is None else params.parallel_tool_calls
    return ChatRequest(
        model=params.model, messages=messages, system=system, max_tokens=max_tokens,
        stop=stop_strings(params.stop), sampling=sampling_of(params), tools=tools,
        tool_choice=_tool_choice(params.tool_choice, tools, parallel),
        thinking=reasoning_for(params.reasoning_effort, max_tokens),
        response_schema=_response_schema(params.response_format),
        top_logprobs=(params.top_logprobs or 0) if params.logprobs else None)


# ---- messages ------------------------------------------------------------------------


def _messages(items: list[ChatCompletionMessageParam]) -> list[Message]:
    messages = [_message(item, f"messages[{i}]") for i, item in enumerate(items)]
    _check_tool_answers(messages)
    return messages


def _message(item: ChatCompletionMessageParam, path: str) -> Message:
    if isinstance(item, ChatCompletionAssistantMessageParam):
        return Message("assistant", _assistant_parts(item, path))
    if isinstance(item, ChatCompletionToolMessageParam):
        return Message("user", [ToolResultPart(item.tool_call_id, content_text(item.content))])
    role: Role = "user" if isinstance(item, ChatCompletionUserMessageParam) else "system"
    return Message(role, [TextPart(content_text(item.content))])


def _assistant_parts(item: ChatCompletionAssistantMessageParam, path: str) -> list[Part]:
    parts: list[Part] = []
    reasoning = item.reasoning_content or item.reasoning
    if reasoning:
        parts.append(ThinkingPart(reasoning))
    text = content_text(item.content)
    if text:
        parts.append(TextPart(text))
    calls = item.tool_calls or []
    parts += [_tool_call(call, f"{path}.tool_calls[{i}]") for i, call in enumerate(calls)]
    if item.content is None and not calls:
        raise invalid(f"{path}.content", "an assistant message needs `content` or "
                      "`tool_calls`")
    return parts


def _tool_call(call: ChatCompletionMessageFunctionToolCallParam, path: str) -> ToolCallPart:
    arguments = call.function.arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):   # bad JSON, too deep, too many digits
        value = None
    if not isinstance(value, dict):
        raise invalid(f"{path}.function.arguments", "Input should be a JSON object encoded "
                      "as a string")
    return ToolCallPart(call.id, call.function.name, value)


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
        raise InvalidRequest("messages: at least one user or assistant message is required",
                             param="messages")
    return ("\n\n".join(system) if system else None), merge_turns(rest)


# ---- tools, reasoning, output format -------------------------------------------------


def _tools(items: list[ChatCompletionFunctionToolParam]) -> list[Tool]:
    tools: list[Tool] = []
    for i, item in enumerate(items):
        function = item.function
        if function.name in {t.name for t in tools}:
            raise invalid(f"tools[{i}].function.name",
                          f"duplicate function name {function.name!r}")
        schema = function.parameters or {"type": "object", "properties": {}}
        tools.append(Tool(function.name, function.description, dict(schema)))
    return tools


def _tool_choice(choice: ChatCompletionToolChoiceOptionParam | None, tools: list[Tool],
                 parallel: bool) -> ToolChoice:
    if choice is None:
        return ToolChoice("auto" if tools else "none", None, parallel)
    if isinstance(choice, str):
        if choice == "required" and not tools:
            raise invalid("tool_choice", "'required' needs `tools`")
        return ToolChoice(choice, None, parallel)
    name = choice.function.name
    if name not in {t.name for t in tools}:
        raise invalid("tool_choice.function.name", f"no function named {name!r} in `tools`")
    return ToolChoice("named", name, parallel)


def reasoning_for(effort: str | None, max_tokens: int | None) -> Thinking | None:
    """The thinking an OpenAI ``reasoning_effort`` (or Responses ``reasoning.effort``)
    asks for: its budget, at most half of ``max_tokens`` where the request sets it (else of
    the cap it gets, ``node/output_cap.py``); none for ``none`` or absent."""
    if effort is None or effort == "none":
        return None
    budget = EFFORT_BUDGETS[effort]
    return Thinking(budget if max_tokens is None else max(1, min(budget, max_tokens // 2)))


def _response_schema(response_format: ResponseFormat | None) -> JsonObject | None:
    if isinstance(response_format, ResponseFormatJSONObject):
        return {"type": "object"}
    if isinstance(response_format, ResponseFormatJSONSchema):
        return dict(response_format.json_schema.schema_ or {"type": "object"})
    return None
