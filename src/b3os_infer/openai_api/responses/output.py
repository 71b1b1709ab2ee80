"""Neutral events into Responses output items and stream events.

One ``ResponseBuilder`` turns a generation's events into the stream's events; the
non-streamed response is the builder's final response over the same events, so the two
agree by construction. Items are opened on their first event and closed, complete, on
the next item or at the end (``output_item.done`` carries the whole item, which is all
Codex reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import assert_never

from ... import ids
from ...core import (
    ChatEvent,
    Finished,
    ServerToolCall,
    ServerToolResult,
    Started,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    TokenLogprob,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from ...errors import InferError
from ...node.prompting import dumps
from ...usage_extension import usage_extension
from ..encode import tool_call_id
from ..wire.response_objects import (
    IncompleteDetails,
    InputTokensDetails,
    ItemStatus,
    OutputItem,
    OutputTokensDetails,
    ReasoningSummary,
    ReasoningText,
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseCustomToolCall,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseError,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseReasoningTextDoneEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from .decode_tools import ToolNames
from .sealing import seal
from .web_search_items import ended, search_item, started

Events = list[ResponseStreamEvent]
# the codes Codex acts on in `response.failed`; anything else is a server error
_FAILURE_CODES = {"context_length_exceeded": "context_length_exceeded",
                  "rate_limited": "rate_limit_exceeded"}


def item_id(prefix: str) -> str:
    return f"{prefix}_{ids.base62(24)}"


def response_usage(usage: Usage) -> ResponseUsage:
    prompt = usage.prompt_tokens
    return ResponseUsage(
        input_tokens=prompt,
        input_tokens_details=InputTokensDetails(cached_tokens=usage.cached_tokens),
        output_tokens=usage.output_tokens,
        output_tokens_details=OutputTokensDetails(
            reasoning_tokens=usage.reasoning_tokens),
        total_tokens=prompt + usage.output_tokens, b3os=usage_extension(usage))


def failure_of(error: InferError) -> ResponseError:
    """The error of a ``response.failed``; a rate limit says when to come back as Codex
    reads it ("try again in Ns")."""
    code = _FAILURE_CODES.get(error.code, error.code if error.status < 500
                              else "server_error")
    message = error.message
    if code == "rate_limit_exceeded" and error.retry_after is not None:
        message += f" Please try again in {math.ceil(error.retry_after)}s."
    return ResponseError(code=code, message=message)


@dataclass
class _Open:
    """The item being written: its index and what it has gathered."""

    index: int
    item: OutputItem
    text: str = ""


class ResponseBuilder:
    """``summaries``: reasoning items carry their text as their one summary part too
    (these models write no separate summary), streamed as ``reasoning_summary_*``."""

    def __init__(self, head: Response, names: ToolNames, *, encrypted: bool,
                 summaries: bool = False) -> None:
        self.response = head
        self.names = names
        self.encrypted = encrypted
        self.summaries = summaries
        self._open: _Open | None = None

    # ---- the response's own events -----------------------------------------------

    def start(self) -> Events:
        return [ResponseCreatedEvent(response=self.response.model_copy(deep=True)),
                ResponseInProgressEvent(response=self.response.model_copy(deep=True))]

    def fail(self, error: InferError) -> Events:
        events = self._close("incomplete")
        self.response.status = "failed"
        self.response.error = failure_of(error)
        return [*events, ResponseFailedEvent(response=self.response)]

    def _finish(self, finished: Finished) -> Events:
        cut = finished.stop_reason in ("length", "window")
        events = self._close("incomplete" if cut else "completed")
        self.response.usage = response_usage(finished.usage)
        if cut:
            self.response.status = "incomplete"
            self.response.incomplete_details = IncompleteDetails(reason="max_output_tokens")
            return [*events, ResponseIncompleteEvent(response=self.response)]
        self.response.status = "completed"
        return [*events, ResponseCompletedEvent(response=self.response)]

    # ---- generation events ----------------------------------------------------------

    def feed(self, event: ChatEvent) -> Events:
        match event:
            case TextDelta(text=text):
                return self._text(text)
            case ThinkingDelta(text=text):
                return self._thinking(text)
            case ThinkingEnd(signature=signature):
                return self._close("completed", signature=signature)
            case ToolCallStart():
                return self._call_start(event)
            case ToolCallDelta(partial_json=fragment):
                return self._call_delta(fragment)
            case ToolCallEnd():
                return self._call_end(event)
            case Finished():
                return self._finish(event)
            case ServerToolCall() | ServerToolResult():
                return self._search(event)
            # Started: the response's own events (start()) opened the stream already;
            # TokenLogprob: the Responses API here offers no log-probabilities
            case Started() | TokenLogprob():
                return []
            case _:
                assert_never(event)

    def _search(self, event: ServerToolCall | ServerToolResult) -> Events:
        """A search opens its item (in progress, then searching); its result closes it."""
        if isinstance(event, ServerToolCall):
            item = search_item(event, item_id("ws"))
            events = self._add(item)
            return events + started(item, len(self.response.output) - 1)
        current = self._open
        if current is None or not isinstance(current.item, ResponseFunctionWebSearch):
            return []
        return ended(current.item, current.index, event.outcome) + self._close("completed")

    def _add(self, item: OutputItem) -> Events:
        events = self._close("completed")
        self._open = _Open(len(self.response.output), item)
        self.response.output.append(item)
        return [*events, ResponseOutputItemAddedEvent(output_index=self._open.index,
                                                      item=item.model_copy(deep=True))]

    def _text(self, text: str) -> Events:
        events: Events = []
        if self._open is None or not isinstance(self._open.item, ResponseOutputMessage):
            events = self._add(ResponseOutputMessage(id=item_id("msg"), status="in_progress",
                                                     content=[]))
            events.append(self._part_added(ResponseOutputText(text="")))
        assert self._open is not None
        self._open.text += text
        events.append(ResponseTextDeltaEvent(item_id=self._open.item.id,
                                             output_index=self._open.index,
                                             content_index=0, delta=text))
        return events

    def _thinking(self, text: str) -> Events:
        events: Events = []
        if self._open is None or not isinstance(self._open.item, ResponseReasoningItem):
            events = self._add(ResponseReasoningItem(id=item_id("rs"), content=[],
                                                     status="in_progress"))
            if self.summaries:
                events.append(ResponseReasoningSummaryPartAddedEvent(
                    item_id=self._open_id, output_index=self._open_index, summary_index=0,
                    part=ReasoningSummary(text="")))
            events.append(self._part_added(ReasoningText(text="")))
        assert self._open is not None
        self._open.text += text
        if self.summaries:
            events.append(ResponseReasoningSummaryTextDeltaEvent(
                item_id=self._open_id, output_index=self._open_index, summary_index=0,
                delta=text))
        events.append(ResponseReasoningTextDeltaEvent(item_id=self._open.item.id,
                                                      output_index=self._open.index,
                                                      content_index=0, delta=text))
        return events

    @property
    def _open_id(self) -> str:
        assert self._open is not None
        return self._open.item.id

    @property
    def _open_index(self) -> int:
        assert self._open is not None
        return self._open.index

    def _part_added(self, part: ResponseOutputText | ReasoningText
                    ) -> ResponseContentPartAddedEvent:
        assert self._open is not None
        return ResponseContentPartAddedEvent(item_id=self._open.item.id,
                                             output_index=self._open.index,
                                             content_index=0, part=part)

    def _call_start(self, event: ToolCallStart) -> Events:
        name = self.names.of(event.name)
        if name.custom:
            return self._add(ResponseCustomToolCall(
                id=item_id("ctc"), call_id=tool_call_id(event.id), name=name.name, input="",
                namespace=name.namespace))
        return self._add(ResponseFunctionToolCall(
            id=item_id("fc"), call_id=tool_call_id(event.id), name=name.name, arguments="",
            namespace=name.namespace, status="in_progress"))

    def _call_delta(self, fragment: str) -> Events:
        if self._open is None or not isinstance(self._open.item, ResponseFunctionToolCall):
            return []
        self._open.text += fragment
        return [ResponseFunctionCallArgumentsDeltaEvent(
            item_id=self._open.item.id, output_index=self._open.index, delta=fragment)]

    def _call_end(self, event: ToolCallEnd) -> Events:
        if self._open is None:
            return []
        if isinstance(self._open.item, ResponseCustomToolCall):
            given = event.input.get("input")
            self._open.text = given if isinstance(given, str) else dumps(event.input)
            return [ResponseCustomToolCallInputDeltaEvent(
                item_id=self._open.item.id, output_index=self._open.index,
                delta=self._open.text), *self._close("completed")]
        if isinstance(self._open.item, ResponseFunctionToolCall) and not self._open.text:
            self._open.text = dumps(event.input)
        return self._close("completed")

    # ---- closing the open item ------------------------------------------------------

    def _close(self, status: ItemStatus, signature: str | None = None) -> Events:
        current, self._open = self._open, None
        if current is None:
            return []
        item, text, index = current.item, current.text, current.index
        events: Events = []
        if isinstance(item, ResponseOutputMessage):
            part = ResponseOutputText(text=text)
            events += [ResponseTextDoneEvent(item_id=item.id, output_index=index,
                                             content_index=0, text=text),
                       ResponseContentPartDoneEvent(item_id=item.id, output_index=index,
                                                    content_index=0, part=part)]
            item.content, item.status = [part], status
        elif isinstance(item, ResponseReasoningItem):
            events += self._close_reasoning(item, index, text, status, signature)
        elif isinstance(item, ResponseFunctionWebSearch):
            pass    # its status is its search's (web_search_items.ended)
        elif isinstance(item, ResponseFunctionToolCall):
            events.append(ResponseFunctionCallArgumentsDoneEvent(
                item_id=item.id, output_index=index, name=item.name, arguments=text))
            item.arguments, item.status = text, status
        else:
            events.append(ResponseCustomToolCallInputDoneEvent(
                item_id=item.id, output_index=index, input=text))
            item.input = text
        events.append(ResponseOutputItemDoneEvent(output_index=index,
                                                  item=item.model_copy(deep=True)))
        return events

    def _close_reasoning(self, item: ResponseReasoningItem, index: int, text: str,
                         status: ItemStatus, signature: str | None) -> Events:
        events: Events = []
        if self.summaries:
            summary = ReasoningSummary(text=text)
            events += [ResponseReasoningSummaryTextDoneEvent(
                item_id=item.id, output_index=index, summary_index=0, text=text),
                ResponseReasoningSummaryPartDoneEvent(
                item_id=item.id, output_index=index, summary_index=0, part=summary)]
            item.summary = [summary]
        part = ReasoningText(text=text)
        events += [ResponseReasoningTextDoneEvent(item_id=item.id, output_index=index,
                                                  content_index=0, text=text),
                   ResponseContentPartDoneEvent(item_id=item.id, output_index=index,
                                                content_index=0, part=part)]
        item.content, item.status = [part], status
        if self.encrypted and signature is not None:
            item.encrypted_content = seal(text, signature)
        return events
