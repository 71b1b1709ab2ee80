"""Request content: the content-block params and the messages that carry them.

Shaped after the SDK's ``*BlockParam`` and ``*MessageParam`` types. Blocks are picked by
their ``type`` through ``CONTENT_BLOCKS``; ``system`` and ``tool_result.content`` take text
blocks only, so another served kind there names the kinds it may be.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire import Ignored, Refused, Supported, WireModel, member
from .kinds import CONTENT_BLOCKS

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


class ToolResultBlockParam(WireModel):
    type: Annotated[Literal["tool_result"], Supported("the kind")]
    tool_use_id: Annotated[str, Supported("the `tool_use` it answers")]
    content: Annotated[str | list[TextOnlyBlockParam] | None,
                       Supported("a string or text blocks")] = None
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
    | Annotated[RedactedThinkingBlockParam, member("redacted_thinking")],
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
    content: Annotated[str | list[TextOnlyBlockParam], Supported("a string or text blocks")]


MessageParam = Annotated[UserMessageParam | AssistantMessageParam | SystemMessageParam,
                         Field(discriminator="role")]

SystemParam = str | list[TextOnlyBlockParam]
