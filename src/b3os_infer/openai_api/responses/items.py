"""A request's input as it is kept, and a kept response as the context of the next one.

``listed_items`` writes each input item as the SDK's ``ResponseItem`` (what
``GET /responses/{id}/input_items`` lists): the ids and statuses a client left out are
filled in, a string input is one user message. ``context_of`` reads a stored response
back as input items: what it was made from, then its output, with each reasoning item
read from its stored text (no seal to check: the text never left the server).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue, TypeAdapter

from ...http.stored_responses import StoredResponse
from ..wire.response_items import (
    EasyInputMessageParam,
    FunctionCallOutput,
    InputContent,
    ResponseCustomToolCallOutputParam,
    ResponseCustomToolCallParam,
    ResponseFunctionToolCallParam,
    ResponseFunctionWebSearchParam,
    ResponseInputItemParam,
    ResponseReasoningItemParam,
    ToolOutput,
)
from ..wire.response_listing import (
    ResponseCustomToolCallItem,
    ResponseCustomToolCallOutputItem,
    ResponseFunctionToolCallOutputItem,
    ResponseInputMessageItem,
    ResponseInputText,
    ResponseItem,
)
from ..wire.response_objects import (
    ReasoningSummary,
    ReasoningText,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from .output import item_id
from .web_search_items import searched_item

_ITEMS: TypeAdapter[list[ResponseInputItemParam]] = TypeAdapter(list[ResponseInputItemParam])


def listed_items(given: str | Sequence[ResponseInputItemParam]
                 ) -> list[dict[str, JsonValue]]:
    if isinstance(given, str):
        given = [EasyInputMessageParam(role="user", content=given)]
    return [_dump(_listed(item)) for item in given]


def context_of(stored: StoredResponse) -> list[ResponseInputItemParam]:
    items = [*stored.items, *stored.body.get("output", [])]
    return _ITEMS.validate_python([_unsealed(item) for item in items])


def _unsealed(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") == "reasoning":
        return {k: v for k, v in item.items() if k != "encrypted_content"}
    return item


def _dump(item: ResponseItem) -> dict[str, JsonValue]:
    dumped: dict[str, JsonValue] = item.model_dump(mode="json", exclude_none=True)
    return dumped


def _texts(content: str | list[InputContent]) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [p.text for p in content if hasattr(p, "text")]


def _output(output: ToolOutput) -> str | list[ResponseInputText]:
    if isinstance(output, str):
        return output
    return [ResponseInputText(text=text) for text in _texts(output)]


def _listed(item: ResponseInputItemParam) -> ResponseItem:
    if isinstance(item, EasyInputMessageParam):
        return _message(item)
    if isinstance(item, ResponseFunctionToolCallParam):
        return ResponseFunctionToolCall(
            id=item.id or item_id("fc"), call_id=item.call_id, name=item.name,
            arguments=item.arguments, namespace=item.namespace, status="completed")
    if isinstance(item, FunctionCallOutput):
        return ResponseFunctionToolCallOutputItem(
            id=item.id or item_id("fco"), call_id=item.call_id, output=_output(item.output))
    if isinstance(item, ResponseCustomToolCallParam):
        return ResponseCustomToolCallItem(
            id=item.id or item_id("ctc"), call_id=item.call_id, name=item.name,
            input=item.input, namespace=item.namespace)
    if isinstance(item, ResponseCustomToolCallOutputParam):
        return ResponseCustomToolCallOutputItem(
            id=item.id or item_id("ctco"), call_id=item.call_id, output=_output(item.output))
    if isinstance(item, ResponseFunctionWebSearchParam):
        return searched_item(item)
    return _reasoning(item)


def _message(item: EasyInputMessageParam) -> ResponseItem:
    if item.role == "assistant":
        text = "".join(_texts(item.content))
        return ResponseOutputMessage(id=item.id or item_id("msg"), status="completed",
                                     content=[ResponseOutputText(text=text)])
    return ResponseInputMessageItem(id=item.id or item_id("msg"), role=item.role,
                                    content=[ResponseInputText(text=t)
                                             for t in _texts(item.content)])


def _reasoning(item: ResponseInputItemParam) -> ResponseReasoningItem:
    assert isinstance(item, ResponseReasoningItemParam)
    return ResponseReasoningItem(
        id=item.id or item_id("rs"), status="completed",
        summary=[ReasoningSummary(text=s.text) for s in item.summary],
        content=[ReasoningText(text=c.text) for c in item.content or []],
        encrypted_content=item.encrypted_content)
