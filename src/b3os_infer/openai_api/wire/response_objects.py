"""What ``POST /responses`` answers: the ``Response`` object, its output items and the
stream events, named after the SDK's types (``Response``, ``ResponseOutputMessage``,
``ResponseStreamEvent`` members). Built as models and serialised once, every field
written (the API spells its nulls out)."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

from ...usage_extension import UsageExtension, extension_field
from ...wire_models import SentModel

ItemStatus = Literal["in_progress", "completed", "incomplete"]


# ---- output items --------------------------------------------------------------------


class ResponseOutputText(SentModel):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[JsonValue] = []
    logprobs: list[JsonValue] = []


class ResponseOutputMessage(SentModel):
    type: Literal["message"] = "message"
    id: str
    role: Literal["assistant"] = "assistant"
    status: ItemStatus
    content: list[ResponseOutputText]


class ReasoningText(SentModel):
    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


class ReasoningSummary(SentModel):
    type: Literal["summary_text"] = "summary_text"
    text: str


class ResponseReasoningItem(SentModel):
    type: Literal["reasoning"] = "reasoning"
    id: str
    summary: list[ReasoningSummary] = []
    content: list[ReasoningText]
    encrypted_content: str | None = None
    status: ItemStatus


class ResponseFunctionToolCall(SentModel):
    type: Literal["function_call"] = "function_call"
    id: str
    call_id: str
    name: str
    arguments: str
    namespace: str | None = None
    status: ItemStatus


class ResponseCustomToolCall(SentModel):
    type: Literal["custom_tool_call"] = "custom_tool_call"
    id: str
    call_id: str
    name: str
    input: str
    namespace: str | None = None


class WebSearchSource(SentModel):
    type: Literal["url"] = "url"
    url: str


class WebSearchAction(SentModel):
    type: Literal["search"] = "search"
    query: str
    queries: list[str] | None = None
    sources: list[WebSearchSource] | None = None


class ResponseFunctionWebSearch(SentModel):
    """A web search this server ran in the model's turn (``web_search`` tool)."""

    type: Literal["web_search_call"] = "web_search_call"
    id: str
    action: WebSearchAction
    status: Literal["in_progress", "searching", "completed", "failed", "incomplete"]


OutputItem = (ResponseOutputMessage | ResponseReasoningItem | ResponseFunctionToolCall
              | ResponseCustomToolCall | ResponseFunctionWebSearch)


# ---- the response --------------------------------------------------------------------


class InputTokensDetails(SentModel):
    cached_tokens: int
    cache_write_tokens: int = 0     # the prefix cache keeps prompts without a charge


class OutputTokensDetails(SentModel):
    reasoning_tokens: int


class ResponseUsage(SentModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int
    # ours, only where speculative decoding drafted for the reply (docs/engine.md)
    b3os: UsageExtension | None = extension_field()


class ResponseError(SentModel):
    code: str
    message: str


class IncompleteDetails(SentModel):
    reason: Literal["max_output_tokens", "content_filter"]


ResponseStatus = Literal["completed", "failed", "in_progress", "incomplete"]


class Response(SentModel):
    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: ResponseStatus
    model: str
    output: list[OutputItem]
    usage: ResponseUsage | None = None
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None
    tools: list[JsonValue]
    tool_choice: JsonValue
    parallel_tool_calls: bool
    temperature: float | None
    top_p: float | None
    max_output_tokens: int | None
    reasoning: JsonValue
    text: JsonValue
    store: bool
    metadata: dict[str, str]
    previous_response_id: str | None = None
    truncation: Literal["disabled"] = "disabled"


class InputTokenCount(SentModel):
    """What ``POST /responses/input_tokens`` answers."""

    object: Literal["response.input_tokens"] = "response.input_tokens"
    input_tokens: int


# ---- stream events -------------------------------------------------------------------


class StreamEvent(SentModel):
    sequence_number: int = 0


class ResponseCreatedEvent(StreamEvent):
    type: Literal["response.created"] = "response.created"
    response: Response


class ResponseInProgressEvent(StreamEvent):
    type: Literal["response.in_progress"] = "response.in_progress"
    response: Response


class ResponseCompletedEvent(StreamEvent):
    type: Literal["response.completed"] = "response.completed"
    response: Response


class ResponseIncompleteEvent(StreamEvent):
    type: Literal["response.incomplete"] = "response.incomplete"
    response: Response


class ResponseFailedEvent(StreamEvent):
    type: Literal["response.failed"] = "response.failed"
    response: Response


class ResponseErrorEvent(StreamEvent):
    """A stream that cannot go on and has no response to fail (its server lost the
    model mid-stream): the SDK's ``ResponseErrorEvent``."""

    type: Literal["error"] = "error"
    code: str | None
    message: str
    param: str | None


class ResponseOutputItemAddedEvent(StreamEvent):
    type: Literal["response.output_item.added"] = "response.output_item.added"
    output_index: int
    item: OutputItem


class ResponseOutputItemDoneEvent(StreamEvent):
    type: Literal["response.output_item.done"] = "response.output_item.done"
    output_index: int
    item: OutputItem


class ItemEvent(StreamEvent):
    item_id: str
    output_index: int


class ResponseContentPartAddedEvent(ItemEvent):
    type: Literal["response.content_part.added"] = "response.content_part.added"
    content_index: int
    part: ResponseOutputText | ReasoningText


class ResponseContentPartDoneEvent(ItemEvent):
    type: Literal["response.content_part.done"] = "response.content_part.done"
    content_index: int
    part: ResponseOutputText | ReasoningText


class ResponseTextDeltaEvent(ItemEvent):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    content_index: int
    delta: str
    logprobs: list[JsonValue] = []


class ResponseTextDoneEvent(ItemEvent):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    content_index: int
    text: str
    logprobs: list[JsonValue] = []


class ResponseReasoningTextDeltaEvent(ItemEvent):
    type: Literal["response.reasoning_text.delta"] = "response.reasoning_text.delta"
    content_index: int
    delta: str


class ResponseReasoningTextDoneEvent(ItemEvent):
    type: Literal["response.reasoning_text.done"] = "response.reasoning_text.done"
    content_index: int
    text: str


class ResponseReasoningSummaryPartAddedEvent(ItemEvent):
    type: Literal["response.reasoning_summary_part.added"] = \
        "response.reasoning_summary_part.added"
    summary_index: int
    part: ReasoningSummary


class ResponseReasoningSummaryPartDoneEvent(ItemEvent):
    type: Literal["response.reasoning_summary_part.done"] = \
        "response.reasoning_summary_part.done"
    summary_index: int
    part: ReasoningSummary


class ResponseReasoningSummaryTextDeltaEvent(ItemEvent):
    type: Literal["response.reasoning_summary_text.delta"] = \
        "response.reasoning_summary_text.delta"
    summary_index: int
    delta: str


class ResponseReasoningSummaryTextDoneEvent(ItemEvent):
    type: Literal["response.reasoning_summary_text.done"] = \
        "response.reasoning_summary_text.done"
    summary_index: int
    text: str


class ResponseWebSearchCallInProgressEvent(ItemEvent):
    type: Literal["response.web_search_call.in_progress"] = \
        "response.web_search_call.in_progress"


class ResponseWebSearchCallSearchingEvent(ItemEvent):
    type: Literal["response.web_search_call.searching"] = \
        "response.web_search_call.searching"


class ResponseWebSearchCallCompletedEvent(ItemEvent):
    type: Literal["response.web_search_call.completed"] = \
        "response.web_search_call.completed"


class ResponseFunctionCallArgumentsDeltaEvent(ItemEvent):
    type: Literal["response.function_call_arguments.delta"] = \
        "response.function_call_arguments.delta"
    delta: str


class ResponseFunctionCallArgumentsDoneEvent(ItemEvent):
    type: Literal["response.function_call_arguments.done"] = \
        "response.function_call_arguments.done"
    name: str
    arguments: str


class ResponseCustomToolCallInputDeltaEvent(ItemEvent):
    type: Literal["response.custom_tool_call_input.delta"] = \
        "response.custom_tool_call_input.delta"
    delta: str


class ResponseCustomToolCallInputDoneEvent(ItemEvent):
    type: Literal["response.custom_tool_call_input.done"] = \
        "response.custom_tool_call_input.done"
    input: str


ResponseStreamEvent = (
    ResponseCreatedEvent | ResponseInProgressEvent | ResponseCompletedEvent
    | ResponseIncompleteEvent | ResponseFailedEvent | ResponseOutputItemAddedEvent
    | ResponseOutputItemDoneEvent | ResponseContentPartAddedEvent
    | ResponseContentPartDoneEvent | ResponseTextDeltaEvent | ResponseTextDoneEvent
    | ResponseReasoningTextDeltaEvent | ResponseReasoningTextDoneEvent
    | ResponseReasoningSummaryPartAddedEvent | ResponseReasoningSummaryPartDoneEvent
    | ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningSummaryTextDoneEvent
    | ResponseFunctionCallArgumentsDeltaEvent | ResponseFunctionCallArgumentsDoneEvent
    | ResponseCustomToolCallInputDeltaEvent | ResponseCustomToolCallInputDoneEvent
    | ResponseWebSearchCallInProgressEvent | ResponseWebSearchCallSearchingEvent
    | ResponseWebSearchCallCompletedEvent)
