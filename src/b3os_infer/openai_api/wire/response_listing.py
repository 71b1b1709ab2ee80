"""What the routes on a stored response answer: its input items as the SDK's
``ResponseItem`` members (every item with an ``id`` and a ``status``), one page of them
(``ResponseItemList``), and the deletion."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from ...wire_models import SentModel
from .response_objects import (
    ItemStatus,
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseReasoningItem,
)


class ResponseInputText(SentModel):
    type: Literal["input_text"] = "input_text"
    text: str


class ResponseInputMessageItem(SentModel):
    type: Literal["message"] = "message"
    id: str
    role: Literal["user", "system", "developer"]
    content: list[ResponseInputText]
    status: ItemStatus = "completed"


class ResponseFunctionToolCallOutputItem(SentModel):
    type: Literal["function_call_output"] = "function_call_output"
    id: str
    call_id: str
    output: str | list[ResponseInputText]
    status: ItemStatus = "completed"


class ResponseCustomToolCallItem(ResponseCustomToolCall):
    status: ItemStatus = "completed"


class ResponseCustomToolCallOutputItem(SentModel):
    type: Literal["custom_tool_call_output"] = "custom_tool_call_output"
    id: str
    call_id: str
    output: str | list[ResponseInputText]
    status: ItemStatus = "completed"


ResponseItem = (ResponseInputMessageItem | ResponseOutputMessage | ResponseFunctionToolCall
                | ResponseFunctionToolCallOutputItem | ResponseCustomToolCallItem
                | ResponseCustomToolCallOutputItem | ResponseReasoningItem
                | ResponseFunctionWebSearch)


class ResponseItemList(SentModel):
    object: Literal["list"] = "list"
    data: list[dict[str, JsonValue]]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ResponseDeleted(SentModel):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True
