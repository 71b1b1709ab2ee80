"""What the routes on a stored response answer: its input items as the SDK's
``ResponseItem`` members (every item with an ``id`` and a ``status``), one page of them
(``ResponseItemList``), and the deletion."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from .response_objects import (
    ItemStatus,
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseObject,
    ResponseOutputMessage,
    ResponseReasoningItem,
)


class ResponseInputText(ResponseObject):
    type: Literal["input_text"] = "input_text"
    text: str


class ResponseInputMessageItem(ResponseObject):
    type: Literal["message"] = "message"
    id: str
    role: Literal["user", "system", "developer"]
    content: list[ResponseInputText]
    status: ItemStatus = "completed"


class ResponseFunctionToolCallOutputItem(ResponseObject):
    type: Literal["function_call_output"] = "function_call_output"
    id: str
    call_id: str
    output: str | list[ResponseInputText]
    status: ItemStatus = "completed"


class ResponseCustomToolCallItem(ResponseCustomToolCall):
    status: ItemStatus = "completed"


class ResponseCustomToolCallOutputItem(ResponseObject):
    type: Literal["custom_tool_call_output"] = "custom_tool_call_output"
    id: str
    call_id: str
    output: str | list[ResponseInputText]
    status: ItemStatus = "completed"


ResponseItem = (ResponseInputMessageItem | ResponseOutputMessage | ResponseFunctionToolCall
                | ResponseFunctionToolCallOutputItem | ResponseCustomToolCallItem
                | ResponseCustomToolCallOutputItem | ResponseReasoningItem
                | ResponseFunctionWebSearch)


class ResponseItemList(ResponseObject):
    object: Literal["list"] = "list"
    data: list[dict[str, JsonValue]]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ResponseDeleted(ResponseObject):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True
