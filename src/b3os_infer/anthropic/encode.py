"""Neutral results and events into Anthropic Message objects and SSE frames.

Each object is built as a wire model (``wire/responses.py``) and serialised once, by
pydantic's serializer, straight to the bytes that go out.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import assert_never

from .. import core
from ..errors import InferError
from ..http.sse import event_stream, named_frame
from ..node.cards import Capabilities
from ..node.context_edits import AppliedEdit, EditedContext
from ..usage_extension import usage_extension
from .envelope import error_body
from .server_blocks import call_block, result_block
from .wire import responses as wire

PING_SECONDS = 10.0
# the neutral stop reasons in the Messages API's words
STOP_REASONS: dict[core.StopReason, wire.StopReason] = {
    "end": "end_turn", "length": "max_tokens", "window": "model_context_window_exceeded",
    "stop_string": "stop_sequence", "tool_calls": "tool_use", "paused": "pause_turn"}


def frame(event: wire.RawMessageStreamEvent) -> bytes:
    """One SSE frame: the event's ``type`` as its name, the event as its data."""
    return named_frame(event.type, event.to_json())


PING_FRAME = frame(wire.PingEvent())
STOP_FRAME = frame(wire.RawMessageStopEvent())
_EMPTY_TEXT = wire.TextBlock(text="")
_EMPTY_THINKING = wire.ThinkingBlock(thinking="", signature="")


def usage_of(usage: core.Usage) -> wire.Usage:
    return wire.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                      cache_read_input_tokens=usage.cached_tokens,
                      output_tokens_details=thinking_of(usage),
                      server_tool_use=server_tools_of(usage), b3os=usage_extension(usage))


def server_tools_of(usage: core.Usage) -> wire.ServerToolUsage | None:
    """The server tools the reply ran; None where it ran none."""
    if not usage.web_search_requests and not usage.web_fetch_requests:
        return None
    return wire.ServerToolUsage(web_search_requests=usage.web_search_requests,
                                web_fetch_requests=usage.web_fetch_requests)


def thinking_of(usage: core.Usage) -> wire.OutputTokensDetails:
    return wire.OutputTokensDetails(thinking_tokens=usage.reasoning_tokens)


def capabilities_of(capabilities: Capabilities, searches: bool = False
                    ) -> wire.ModelCapabilities:
    """A model card's capabilities in the Models API's words; ``searches``: the node runs
    web searches (a backend is configured)."""
    thinking = wire.CapabilitySupport(supported=capabilities.thinking)
    search = wire.CapabilitySupport(supported=searches)
    return wire.ModelCapabilities(
        server_tools=wire.ServerToolsCapability(supported=searches, web_search=search),
        effort=wire.EffortCapability(supported=capabilities.thinking, low=thinking,
                                     medium=thinking, high=thinking, xhigh=thinking,
                                     max=thinking),
        image_input=wire.CapabilitySupport(supported=capabilities.vision),
        structured_outputs=wire.CapabilitySupport(supported=capabilities.structured_output),
        thinking=wire.ThinkingCapability(supported=capabilities.thinking, types=wire.ThinkingTypes(
            enabled=thinking, adaptive=thinking, between_tools=thinking)))


def tool_use_id(call_id: str) -> str:
    """A call the node minted, as the Messages API spells tool use ids."""
    return "toolu_" + call_id


def block_of(part: core.Part) -> wire.ContentBlock:
    if isinstance(part, core.TextPart):
        return wire.TextBlock(text=part.text)
    if isinstance(part, core.ThinkingPart):
        return wire.ThinkingBlock(thinking=part.thinking, signature=part.signature or "")
    if isinstance(part, core.ToolCallPart):
        return wire.ToolUseBlock(id=tool_use_id(part.id), name=part.name, input=part.input)
    if isinstance(part, core.ServerToolCallPart):
        return call_block(part.id, part.name, part.input)
    if isinstance(part, core.ServerToolResultPart):
        return result_block(part.call_id, part.outcome)
    raise TypeError(f"{type(part).__name__} is not part of a reply")


def edit_of(applied: AppliedEdit) -> wire.ClearToolUsesEditResponse \
        | wire.ClearThinkingEditResponse:
    if applied.kind == "clear_tool_uses":
        return wire.ClearToolUsesEditResponse(cleared_tool_uses=applied.cleared,
                                              cleared_input_tokens=applied.cleared_tokens)
    return wire.ClearThinkingEditResponse(cleared_thinking_turns=applied.cleared,
                                          cleared_input_tokens=applied.cleared_tokens)


def context_management_of(edited: EditedContext | None
                          ) -> wire.ContextManagementResponse | None:
    """What the reply says of the edits: None where the request asked for none."""
    if edited is None or edited.request.context_edits is None:
        return None
    return wire.ContextManagementResponse(applied_edits=[edit_of(a) for a in edited.applied])


def message_of(message_id: str, model: str, result: core.ChatResult,
               diagnostics: wire.Diagnostics | None = None,
               edited: EditedContext | None = None) -> wire.Message:
    return wire.Message(id=message_id, model=model,
                        content=[block_of(part) for part in result.parts],
                        stop_reason=STOP_REASONS[result.stop_reason],
                        stop_sequence=result.stop_sequence, usage=usage_of(result.usage),
                        diagnostics=diagnostics,
                        context_management=context_management_of(edited))


class MessageStreamEncoder:
    """Turns neutral chat events into Anthropic's SSE event sequence.

    Blocks are opened lazily, numbered from 0 and closed before the next opens, so
    the stream folds into exactly the message the non-streaming call returns.
    """

    def __init__(self, message_id: str, model: str,
                 diagnose: Callable[[core.Usage], wire.Diagnostics | None] | None = None,
                 edited: EditedContext | None = None) -> None:
        self.message_id = message_id
        self.model = model
        self.diagnose = diagnose
        self.context_management = context_management_of(edited)
        self._index = -1
        self._open_kind: str | None = None

    def encode(self, event: core.ChatEvent) -> list[bytes]:
        match event:
            case core.TextDelta(text=text):
                return self._open(_EMPTY_TEXT) + [self._delta(wire.TextDelta(text=text))]
            case core.ThinkingDelta() | core.ThinkingEnd():
                return self._thinking(event)
            case core.ToolCallStart(id=call_id, name=name):
                block = wire.ToolUseBlock(id=tool_use_id(call_id), name=name, input={})
                return self._close() + self._open(block)
            case core.ToolCallDelta(partial_json=fragment):
                return [self._delta(wire.InputJSONDelta(partial_json=fragment))]
            case core.ToolCallEnd():
                return self._close()    # the input went out as the deltas before
            case core.ServerToolCall() | core.ServerToolResult():
                return self._server_tool(event)
            case core.Started(usage=usage):
                return self._start(usage)
            case core.Finished():
                return self._finish(event)
            case core.TokenLogprob():
                return []   # the Messages API has no log-probabilities (never asked for)
            case _:
                assert_never(event)

    def _thinking(self, event: core.ThinkingDelta | core.ThinkingEnd) -> list[bytes]:
        """Reasoning opens a thinking block; its signature is the block's last delta and
        closes it."""
        frames = self._open(_EMPTY_THINKING)
        if isinstance(event, core.ThinkingDelta):
            return frames + [self._delta(wire.ThinkingDelta(thinking=event.text))]
        return frames + [self._delta(wire.SignatureDelta(signature=event.signature)),
                         *self._close()]

    def _server_tool(self, event: core.ServerToolCall | core.ServerToolResult) -> list[bytes]:
        """A call opens with ``input: {}``, its input follows as one delta; a result block
        comes whole in its start event. Each is closed at once."""
        if isinstance(event, core.ServerToolResult):
            return self._close() + self._open(result_block(event.call_id, event.outcome)) + \
                self._close()
        block = call_block(event.id, event.name, {})
        delta = wire.InputJSONDelta(partial_json=json.dumps(event.input, ensure_ascii=False))
        return self._close() + self._open(block) + [self._delta(delta)] + self._close()

    def _start(self, usage: core.Usage) -> list[bytes]:
        message = wire.Message(
            id=self.message_id, model=self.model, content=[], stop_reason=None,
            stop_sequence=None, usage=wire.Usage(input_tokens=usage.input_tokens,
                                                 output_tokens=0,
                                                 cache_read_input_tokens=usage.cached_tokens),
            diagnostics=self.diagnose(usage) if self.diagnose else None)
        return [frame(wire.RawMessageStartEvent(message=message)), PING_FRAME]

    def _open(self, block: wire.ContentBlock) -> list[bytes]:
        if self._open_kind == block.type:
            return []
        frames = self._close()
        self._index += 1
        self._open_kind = block.type
        frames.append(frame(wire.RawContentBlockStartEvent(index=self._index,
                                                           content_block=block)))
        return frames

    def _delta(self, delta: wire.RawContentBlockDelta) -> bytes:
        return frame(wire.RawContentBlockDeltaEvent(index=self._index, delta=delta))

    def _close(self) -> list[bytes]:
        if self._open_kind is None:
            return []
        self._open_kind = None
        return [frame(wire.RawContentBlockStopEvent(index=self._index))]

    def _finish(self, event: core.Finished) -> list[bytes]:
        usage = wire.MessageDeltaUsage(input_tokens=event.usage.input_tokens,
                                       cache_read_input_tokens=event.usage.cached_tokens,
                                       output_tokens=event.usage.output_tokens,
                                       output_tokens_details=thinking_of(event.usage),
                                       server_tool_use=server_tools_of(event.usage),
                                       b3os=usage_extension(event.usage))
        delta = wire.MessageDelta(stop_reason=STOP_REASONS[event.stop_reason],
                                  stop_sequence=event.stop_sequence)
        done = wire.RawMessageDeltaEvent(delta=delta, usage=usage,
                                          context_management=self.context_management)
        return self._close() + [frame(done), STOP_FRAME]


def encode_stream(events: AsyncIterator[core.ChatEvent], encoder: MessageStreamEncoder,
                  request_id: str | None, error_of: Callable[[Exception], InferError],
                  keepalive: float = PING_SECONDS) -> AsyncIterator[bytes]:
    """The SSE body; an error after the 200 goes out as an ``error`` event, and a ``ping``
    event fills every silence of ``keepalive`` seconds (a long prompt being processed)."""
    def failed(exc: Exception) -> bytes:
        return frame(error_body(error_of(exc), request_id))
    return event_stream(events, encoder.encode, failed, PING_FRAME, keepalive)
