"""Request content: the content-block params and the messages that carry them.

Shaped after the SDK's ``*BlockParam`` and ``*MessageParam`` types. Blocks are picked by
their ``type`` through ``CONTENT_BLOCKS``; ``system`` and ``tool_result.content`` take text
blocks only, so another served kind there names the kinds it may be.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel, member
from .kinds import CONTENT_BLOCKS, TOOL_CHANGES
from .server_tools import (
    ServerToolUseBlockParam,
    WebFetchToolResultBlockParam,
    WebSearchToolResultBlockParam,
)
from .tools import TOOL_NAME, ToolParam

_CACHE = Ignored("the prefix cache is automatic")


class TextBlockParam(WireModel):
    type: Annotated[Literal["text"], Supported("the kind")]
    text: Annotated[str, Supported("must be non-empty")]
    cache_control: Annotated[JsonValue, _CACHE] = None
    citations: Annotated[JsonValue, Refused("citations are not produced")] = None


class ToolUseBlockParam(WireModel):
    type: Annotated[Literal["tool_use"], Supported("the kind")]
    id: Annotated[str, Supported("answered by a `tool_result` with this `tool_use_id`")]
    name: Annotated[str, Supported("the tool called")]
    input: Annotated[dict[str, JsonValue], Supported("the call's arguments")]
    caller: Annotated[JsonValue, Ignored("every call is direct")] = None
    cache_control: Annotated[JsonValue, _CACHE] = None


TextOnlyBlockParam = Annotated[Annotated[TextBlockParam, member("text")],
                               CONTENT_BLOCKS.discriminator()]


class ToolReferenceBlockParam(WireModel):
    """A tool search's answer: the deferred tool ``tool_name`` is loaded here."""

    type: Annotated[Literal["tool_reference"], Supported("the kind")]
    tool_name: Annotated[str, Supported("a tool of `tools[]`")]
    cache_control: Annotated[JsonValue, _CACHE] = None


class ToolChangeToolReference(WireModel):
    type: Annotated[Literal["tool_reference"], Supported("the kind")]
    name: Annotated[str, Supported("a tool of `tools[]`"), Field(pattern=TOOL_NAME)]


class ToolChangeToolDefinition(WireModel):
    type: Annotated[Literal["tool_definition"], Supported("the kind")]
    definition: Annotated[ToolParam, Supported("a custom tool, as in `tools[]`")]


ToolChangeTarget = Annotated[
    Annotated[ToolChangeToolReference, member("tool_reference")]
    | Annotated[ToolChangeToolDefinition, member("tool_definition")],
    TOOL_CHANGES.discriminator()]


class ToolAdditionBlockParam(WireModel):
    """Mid-conversation: ``tool`` is offered to the model from here on."""

    type: Annotated[Literal["tool_addition"], Supported("the kind")]
    tool: Annotated[ToolChangeTarget, Supported("a tool of `tools[]`, or one defined here")]
    cache_control: Annotated[JsonValue, _CACHE] = None


class ToolRemovalBlockParam(WireModel):
    """Mid-conversation: ``tool`` is no longer offered to the model from here on."""

    type: Annotated[Literal["tool_removal"], Supported("the kind")]
    tool: Annotated[Annotated[Annotated[ToolChangeToolReference, member("tool_reference")],
                              TOOL_CHANGES.discriminator()],
                    Supported("a tool offered so far, by name")]
    cache_control: Annotated[JsonValue, _CACHE] = None


ToolResultContentBlockParam = Annotated[
    Annotated[TextBlockParam, member("text")]
    | Annotated[ToolReferenceBlockParam, member("tool_reference")],
    CONTENT_BLOCKS.discriminator()]


class ToolResultBlockParam(WireModel):
    type: Annotated[Literal["tool_result"], Supported("the kind")]
    tool_use_id: Annotated[str, Supported("the `tool_use` it answers")]
    content: Annotated[str | list[ToolResultContentBlockParam] | None,
                       Supported("a string, or text and `tool_reference` blocks")] = None
    is_error: Annotated[bool | None, Supported("the call failed")] = None
    cache_control: Annotated[JsonValue, _CACHE] = None


class ThinkingBlockParam(WireModel):
    type: Annotated[Literal["thinking"], Supported("the kind")]
    thinking: Annotated[str, Supported("the reasoning text")]
    signature: Annotated[str, Supported("verified before the text is rendered back")]


class RedactedThinkingBlockParam(WireModel):
    type: Annotated[Literal["redacted_thinking"], Supported("the kind")]
    data: Annotated[str, Supported("opaque; nothing of it is rendered")]


ContentBlockParam = Annotated[
    Annotated[TextBlockParam, member("text")]
    | Annotated[ToolUseBlockParam, member("tool_use")]
    | Annotated[ToolResultBlockParam, member("tool_result")]
    | Annotated[ThinkingBlockParam, member("thinking")]
    | Annotated[RedactedThinkingBlockParam, member("redacted_thinking")]
    | Annotated[ToolAdditionBlockParam, member("tool_addition")]
    | Annotated[ToolRemovalBlockParam, member("tool_removal")]
    | Annotated[ServerToolUseBlockParam, member("server_tool_use")]
    | Annotated[WebSearchToolResultBlockParam, member("web_search_tool_result")]
    | Annotated[WebFetchToolResultBlockParam, member("web_fetch_tool_result")],
    CONTENT_BLOCKS.discriminator()]

MessageContentParam = str | list[ContentBlockParam]


class UserMessageParam(WireModel):
    role: Annotated[Literal["user"], Supported("the caller's turn")]
    content: Annotated[MessageContentParam, Supported("a string or content blocks")]


class AssistantMessageParam(WireModel):
    role: Annotated[Literal["assistant"], Supported("the model's turn; last, it is prefill")]
    content: Annotated[MessageContentParam, Supported("a string or content blocks")]


class SystemMessageParam(WireModel):
    """Decoded only to be refused with the real API's wording (``decode.py``)."""

    role: Annotated[Literal["system"], Supported("refused: use the top-level `system`")]
    # anything the real API takes in a system message (text, `tool_addition` blocks, ...):
    # the message is refused as a whole, with the wording clients retry on, whatever it holds
    content: Annotated[JsonValue, Supported("refused with the message")]
    clear_at: Annotated[JsonValue, Supported("refused with the message")] = None
    output_config: Annotated[JsonValue, Supported("refused with the message")] = None


MessageParam = Annotated[UserMessageParam | AssistantMessageParam | SystemMessageParam,
                         Field(discriminator="role")]

SystemParam = str | list[TextOnlyBlockParam]
