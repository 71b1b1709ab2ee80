"""Responses requests into the neutral core.

The body is validated as ``ResponseCreateParams`` (``wire/response_create.py``), which
holds every field's policy; here the items become messages: leading system and developer
messages join ``instructions``, tool calls and their outputs become the core's parts (an
output must answer an earlier call), reasoning comes back from its seal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from ...core import (
    ChatRequest,
    JsonObject,
    Message,
    Part,
    Sampling,
    TextPart,
    Thinking,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    merge_turns,
)
from ...errors import InvalidRequest, UnsupportedParameter
from ...node.server_tools.functions import function_of
from ...node.signatures import Signer
from ...wire_models import decode
from ..decode import invalid, reasoning_for
from ..wire.response_create import (
    ENCRYPTED,
    ResponseCreateParams,
    ResponseFormatJSONObject,
    ResponseFormatTextJSONSchemaConfig,
)
from ..wire.response_items import (
    EasyInputMessageParam,
    FunctionCallOutput,
    InputContent,
    ResponseCustomToolCallOutputParam,
    ResponseCustomToolCallParam,
    ResponseFunctionToolCallParam,
    ResponseFunctionWebSearchParam,
    ResponseInputItemParam,
    ResponseInputTextParam,
    ResponseOutputTextParam,
    ResponseReasoningItemParam,
)
from ..wire.response_kinds import TABLES
from ..wire.response_tools import ToolChoiceAllowedParam
from .decode_tools import ToolNames, allowed_tools, tool_choice_of, tools_of, web_search_of
from .policy import OUTPUT_CAP
from .sealing import unseal
from .web_search_items import replayed_parts


@dataclass(frozen=True)
class ResponseOptions:
    """What shapes the response rather than the generation."""

    stream: bool
    encrypted: bool
    names: ToolNames
    summaries: bool     # `reasoning.summary` asked: the reasoning is its own summary


def decode_params(body: Mapping[str, Any]) -> ResponseCreateParams:
    return decode(ResponseCreateParams, body, TABLES)


def response_request(params: ResponseCreateParams, signer: Signer,
                     prior: Sequence[ResponseInputItemParam] = (), *, search: bool = False
                     ) -> tuple[ChatRequest, ResponseOptions]:
    """The request in the core's terms; ``prior``: the stored context it continues;
    ``search``: a ``web_search`` tool runs here (else it is left out of the prompt)."""
    tools, names = tools_of(params.tools or [])
    web_search = web_search_of(params.tools or []) if search else None
    if web_search is not None:
        if web_search.name in names.by_flat:
            raise invalid("tools", "a function named 'web_search' cannot be declared beside "
                          "the web_search tool")
        tools.append(function_of(web_search))
    if isinstance(params.tool_choice, ToolChoiceAllowedParam):
        tools = allowed_tools(params.tool_choice, tools, names)
    system, messages = _conversation(params, signer, names, prior)
    max_tokens = params.max_output_tokens or OUTPUT_CAP.default
    parallel = True if params.parallel_tool_calls is None else params.parallel_tool_calls
    chat = ChatRequest(
        model=params.model, messages=messages, system=system, max_tokens=max_tokens,
        sampling=Sampling(temperature=1.0 if params.temperature is None
                          else params.temperature,
                          top_p=1.0 if params.top_p is None else params.top_p),
        tools=tools, tool_choice=tool_choice_of(params.tool_choice, tools, parallel),
        thinking=_thinking(params, max_tokens), response_schema=_schema(params))
    if web_search is not None and any(t.name == web_search.name for t in tools):
        chat.server_tools = (web_search,)
    asked = params.reasoning
    options = ResponseOptions(stream=bool(params.stream),
                              encrypted=ENCRYPTED in (params.include or []), names=names,
                              summaries=bool(asked and (asked.summary
                                                        or asked.generate_summary)))
    return chat, options


def _thinking(params: ResponseCreateParams, max_tokens: int | None) -> Thinking | None:
    return reasoning_for(params.reasoning.effort if params.reasoning else None, max_tokens)


def _schema(params: ResponseCreateParams) -> JsonObject | None:
    found = params.text.format if params.text else None
    if isinstance(found, ResponseFormatJSONObject):
        return {"type": "object"}
    if isinstance(found, ResponseFormatTextJSONSchemaConfig):
        return dict(found.schema_)
    return None


# ---- items into messages -------------------------------------------------------------


def _conversation(params: ResponseCreateParams, signer: Signer, names: ToolNames,
                  prior: Sequence[ResponseInputItemParam]) -> tuple[str | None, list[Message]]:
    """The system prompt and the turns: the stored context's (``previous_response_id``;
    its system and developer messages led their own requests), then this input's."""
    system = [params.instructions] if params.instructions else []
    system += [_text(_content(item)) for item in prior if _is_system(item)]
    located = [("previous_response_id", item) for item in prior if not _is_system(item)]
    items = params.input
    if isinstance(items, str):
        items = [EasyInputMessageParam(role="user", content=items)]
    start = 0
    while start < len(items) and _is_system(items[start]):
        system.append(_text(_content(items[start])))
        start += 1
    located += [(f"input[{i}]", item) for i, item in enumerate(items) if i >= start]
    messages = [_message(item, path, signer, names) for path, item in located]
    _check_outputs(messages, [path for path, _ in located])
    if not messages:
        raise InvalidRequest("input: at least one item that is not a system or developer "
                             "message is required", param="input")
    return ("\n\n".join(system) if system else None), merge_turns(messages)


def _is_system(item: ResponseInputItemParam) -> bool:
    return isinstance(item, EasyInputMessageParam) and item.role in ("system", "developer")


def _content(item: ResponseInputItemParam) -> str | list[InputContent]:
    assert isinstance(item, EasyInputMessageParam)
    return item.content


def _text(content: str | list[InputContent]) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content
                   if isinstance(p, ResponseInputTextParam | ResponseOutputTextParam))


def _message(item: ResponseInputItemParam, path: str, signer: Signer,
             names: ToolNames) -> Message:
    if isinstance(item, EasyInputMessageParam):
        if item.role in ("system", "developer"):
            raise UnsupportedParameter(
                f"{path}: system and developer messages are served only before the first "
                "other item (with `instructions`)", param=f"{path}.role")
        return Message("assistant" if item.role == "assistant" else "user",
                       [TextPart(_text(item.content))])
    if isinstance(item, FunctionCallOutput | ResponseCustomToolCallOutputParam):
        return Message("user", [ToolResultPart(item.call_id, _text(item.output))])
    if isinstance(item, ResponseFunctionWebSearchParam):
        return Message("assistant", replayed_parts(item))
    return Message("assistant", [_assistant_part(item, path, signer, names)])


def _assistant_part(item: ResponseInputItemParam, path: str, signer: Signer,
                    names: ToolNames) -> Part:
    if isinstance(item, ResponseFunctionToolCallParam):
        return ToolCallPart(item.call_id, names.flat(item.name, item.namespace),
                            _arguments(item.arguments, f"{path}.arguments"))
    if isinstance(item, ResponseCustomToolCallParam):
        return ToolCallPart(item.call_id, names.flat(item.name, item.namespace),
                            {"input": item.input})
    assert isinstance(item, ResponseReasoningItemParam)
    if item.encrypted_content is not None:
        return unseal(item.encrypted_content, signer, f"{path}.encrypted_content")
    texts = item.content if item.content else item.summary
    return ThinkingPart("".join(t.text for t in texts))


def _arguments(text: str, path: str) -> dict[str, JsonValue]:
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):   # bad JSON, too deep, too many digits
        value = None
    if not isinstance(value, dict):
        raise invalid(path, "Input should be a JSON object encoded as a string")
    return value


def _check_outputs(messages: list[Message], paths: list[str]) -> None:
    """OpenAI's rule: a tool call's output answers an earlier call with its ``call_id``."""
    called: set[str] = set()
    for message, path in zip(messages, paths, strict=True):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.id)
            elif isinstance(part, ToolResultPart) and part.call_id not in called:
                raise invalid(path, "No tool call found for function call output with "
                              f"call_id {part.call_id}.")
