"""What the Messages API answers: Message, its blocks and usage, the stream events, errors.

Shaped after the SDK's ``Message``, ``*Block``, ``Usage`` and ``Raw*Event`` types. They are
built by ``encode.py`` from neutral results and serialised once, straight to JSON bytes
(``to_json``); nothing parses them back.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue

from ...usage_extension import UsageExtension, extension_field
from ...wire_models import SentModel

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn",
                     "refusal", "model_context_window_exceeded"]


class ResponseModel(SentModel):
    """An object of the Messages API: every field sent, and frozen once built (a block
    such as ``DIRECT`` is shared by the messages that carry it)."""

    model_config = ConfigDict(frozen=True, protected_namespaces=())


class DirectCaller(ResponseModel):
    type: Literal["direct"] = "direct"


DIRECT = DirectCaller()


class TextBlock(ResponseModel):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(ResponseModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class ToolUseBlock(ResponseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, JsonValue]
    caller: DirectCaller = DIRECT


class ServerToolUseBlock(ResponseModel):
    type: Literal["server_tool_use"] = "server_tool_use"
    id: str
    name: Literal["web_search", "web_fetch"]
    input: dict[str, JsonValue]
    caller: DirectCaller = DIRECT


SearchErrorCode = Literal["invalid_tool_input", "unavailable", "max_uses_exceeded",
                          "too_many_requests", "query_too_long", "request_too_large"]
FetchErrorCode = Literal["invalid_tool_input", "url_too_long", "url_not_allowed",
                         "url_not_in_prior_context", "url_not_accessible",
                         "unsupported_content_type", "too_many_requests", "max_uses_exceeded",
                         "unavailable", "content_too_large"]


class WebSearchResultBlock(ResponseModel):
    type: Literal["web_search_result"] = "web_search_result"
    url: str
    title: str
    encrypted_content: str
    page_age: str | None = None


class WebSearchToolResultError(ResponseModel):
    type: Literal["web_search_tool_result_error"] = "web_search_tool_result_error"
    error_code: SearchErrorCode


class WebSearchToolResultBlock(ResponseModel):
    type: Literal["web_search_tool_result"] = "web_search_tool_result"
    tool_use_id: str
    content: list[WebSearchResultBlock] | WebSearchToolResultError
    caller: DirectCaller = DIRECT


class PlainTextSource(ResponseModel):
    type: Literal["text"] = "text"
    media_type: Literal["text/plain"] = "text/plain"
    data: str


class DocumentBlock(ResponseModel):
    type: Literal["document"] = "document"
    source: PlainTextSource
    title: str | None = None
    citations: None = None


class WebFetchBlock(ResponseModel):
    type: Literal["web_fetch_result"] = "web_fetch_result"
    url: str
    content: DocumentBlock
    retrieved_at: str | None = None


class WebFetchToolResultErrorBlock(ResponseModel):
    type: Literal["web_fetch_tool_result_error"] = "web_fetch_tool_result_error"
    error_code: FetchErrorCode


class WebFetchToolResultBlock(ResponseModel):
    type: Literal["web_fetch_tool_result"] = "web_fetch_tool_result"
    tool_use_id: str
    content: WebFetchBlock | WebFetchToolResultErrorBlock
    caller: DirectCaller = DIRECT


ContentBlock = Annotated[TextBlock | ThinkingBlock | ToolUseBlock | ServerToolUseBlock
                         | WebSearchToolResultBlock | WebFetchToolResultBlock,
                         Field(discriminator="type")]


class CacheCreation(ResponseModel):
    """Tokens written to the cache by lifetime: none here, the prefix cache is automatic."""

    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0


NO_CACHE_CREATION = CacheCreation()


class OutputTokensDetails(ResponseModel):
    thinking_tokens: int


class ServerToolUsage(ResponseModel):
    web_search_requests: int = 0
    web_fetch_requests: int = 0


class Usage(ResponseModel):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation: CacheCreation = NO_CACHE_CREATION
    output_tokens_details: OutputTokensDetails | None = None
    # only where the reply ran server tools
    server_tool_use: ServerToolUsage | None = None
    service_tier: Literal["standard", "priority", "batch"] = "standard"
    # ours, only where speculative decoding drafted for the reply (docs/engine.md)
    b3os: UsageExtension | None = extension_field()


class CacheMissChanged(ResponseModel):
    """The prompt changed before the earlier reply's prefix ended, at ``type``."""

    type: Literal["model_changed", "system_changed", "tools_changed", "messages_changed"]
    cache_missed_input_tokens: int


class CacheMissUndiagnosed(ResponseModel):
    type: Literal["previous_message_not_found", "unavailable"]


class Diagnostics(ResponseModel):
    cache_miss_reason: CacheMissChanged | CacheMissUndiagnosed | None


class ClearToolUsesEditResponse(ResponseModel):
    type: Literal["clear_tool_uses_20250919"] = "clear_tool_uses_20250919"
    cleared_tool_uses: int
    cleared_input_tokens: int


class ClearThinkingEditResponse(ResponseModel):
    type: Literal["clear_thinking_20251015"] = "clear_thinking_20251015"
    cleared_thinking_turns: int
    cleared_input_tokens: int


AppliedEdit = Annotated[ClearToolUsesEditResponse | ClearThinkingEditResponse,
                        Field(discriminator="type")]


class ContextManagementResponse(ResponseModel):
    """The edits that cleared something, in the order they were made."""

    applied_edits: list[AppliedEdit]


class Message(ResponseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[ContentBlock]
    stop_reason: StopReason | None
    stop_sequence: str | None
    stop_details: None = None   # only refusals carry details; these models never refuse
    usage: Usage
    # only when the request asked (``diagnostics``) and its prompt missed the cache
    diagnostics: Diagnostics | None = None
    # only when the request asked for edits (``context_management``)
    context_management: ContextManagementResponse | None = None


class CountTokensContextManagement(ResponseModel):
    original_input_tokens: int


class MessageTokensCount(ResponseModel):
    input_tokens: int
    # only when the request asked for edits: the prompt's length before them
    context_management: CountTokensContextManagement | None = None


# ---- stream events -------------------------------------------------------------------


class TextDelta(ResponseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class InputJSONDelta(ResponseModel):
    type: Literal["input_json_delta"] = "input_json_delta"
    partial_json: str


class ThinkingDelta(ResponseModel):
    type: Literal["thinking_delta"] = "thinking_delta"
    thinking: str


class SignatureDelta(ResponseModel):
    type: Literal["signature_delta"] = "signature_delta"
    signature: str


RawContentBlockDelta = Annotated[TextDelta | InputJSONDelta | ThinkingDelta | SignatureDelta,
                                 Field(discriminator="type")]


class RawMessageStartEvent(ResponseModel):
    type: Literal["message_start"] = "message_start"
    message: Message


class RawContentBlockStartEvent(ResponseModel):
    type: Literal["content_block_start"] = "content_block_start"
    index: int
    content_block: ContentBlock


class RawContentBlockDeltaEvent(ResponseModel):
    type: Literal["content_block_delta"] = "content_block_delta"
    index: int
    delta: RawContentBlockDelta


class RawContentBlockStopEvent(ResponseModel):
    type: Literal["content_block_stop"] = "content_block_stop"
    index: int


class MessageDelta(ResponseModel):
    stop_reason: StopReason | None
    stop_sequence: str | None
    stop_details: None = None


class MessageDeltaUsage(ResponseModel):
    """Cumulative counts; ``output_tokens`` overwrites the one ``message_start`` sent."""

    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int
    output_tokens_details: OutputTokensDetails | None = None
    server_tool_use: ServerToolUsage | None = None
    b3os: UsageExtension | None = extension_field()


class RawMessageDeltaEvent(ResponseModel):
    type: Literal["message_delta"] = "message_delta"
    delta: MessageDelta
    usage: MessageDeltaUsage
    # the stream's place for the edits made (the SDK's accumulator reads it here)
    context_management: ContextManagementResponse | None = None


class RawMessageStopEvent(ResponseModel):
    type: Literal["message_stop"] = "message_stop"


class PingEvent(ResponseModel):
    type: Literal["ping"] = "ping"


# ---- errors --------------------------------------------------------------------------


class ErrorObject(ResponseModel):
    type: str
    message: str


class B3osError(ResponseModel):
    """Ours: the stable code and the offending field's path."""

    code: str
    param: str | None


class ErrorResponse(ResponseModel):
    """The error body, and the ``error`` event of a stream that fails after its 200."""

    type: Literal["error"] = "error"
    error: ErrorObject
    b3os: B3osError
    request_id: str | None


RawMessageStreamEvent = (RawMessageStartEvent | RawContentBlockStartEvent
                         | RawContentBlockDeltaEvent | RawContentBlockStopEvent
                         | RawMessageDeltaEvent | RawMessageStopEvent | PingEvent
                         | ErrorResponse)


# ---- models --------------------------------------------------------------------------


class CapabilitySupport(ResponseModel):
    supported: bool


NO = CapabilitySupport(supported=False)
YES = CapabilitySupport(supported=True)


class ThinkingTypes(ResponseModel):
    enabled: CapabilitySupport
    adaptive: CapabilitySupport
    disabled: CapabilitySupport = YES
    between_tools: CapabilitySupport


class ThinkingCapability(ResponseModel):
    supported: bool
    types: ThinkingTypes


class EffortCapability(ResponseModel):
    """``output_config.effort`` sets the adaptive thinking budget, at every level."""

    supported: bool
    low: CapabilitySupport
    medium: CapabilitySupport
    high: CapabilitySupport
    xhigh: CapabilitySupport
    max: CapabilitySupport


class ContextManagementCapability(ResponseModel):
    """Both edits are made on the node, for every chat model; compaction is not."""

    supported: bool = True
    clear_tool_uses_20250919: CapabilitySupport = YES
    clear_thinking_20251015: CapabilitySupport = YES
    compact_20260112: CapabilitySupport = NO


class ServerToolsCapability(ResponseModel):
    supported: bool = False
    code_execution: CapabilitySupport = NO
    web_search: CapabilitySupport = NO


class ModelCapabilities(ResponseModel):
    batch: CapabilitySupport = NO
    citations: CapabilitySupport = NO
    code_execution: CapabilitySupport = NO
    context_management: ContextManagementCapability = ContextManagementCapability()
    effort: EffortCapability
    image_input: CapabilitySupport
    pdf_input: CapabilitySupport = NO
    server_tools: ServerToolsCapability = ServerToolsCapability()
    structured_outputs: CapabilitySupport
    thinking: ThinkingCapability


class ModelResidency(ResponseModel):
    """Ours (``b3os``): whether the model's weights are in memory now (docs/models.md)."""

    state: Literal["loaded", "loading", "unloaded"]


class ModelInfo(ResponseModel):
    type: Literal["model"] = "model"
    id: str
    display_name: str
    created_at: str
    lifecycle: Literal["active", "deprecated", "retired"] = "active"
    max_input_tokens: int
    max_tokens: int
    capabilities: ModelCapabilities
    b3os: ModelResidency


class ModelListPage(ResponseModel):
    data: list[ModelInfo]
    has_more: bool
    first_id: str | None
    last_id: str | None
