"""Content parts of messages: text is read; refusals are accepted and dropped; images,
audio and files are refused by the kind table (the served models read text only)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import JsonValue

from ...wire_models import Ignored, Supported, WireModel, member
from .kinds import CONTENT_PARTS


class ChatCompletionContentPartTextParam(WireModel):
    type: Annotated[Literal["text"], Supported("`text`")]
    text: Annotated[str, Supported("the text")]
    prompt_cache_breakpoint: Annotated[dict[str, JsonValue] | None, Ignored(
        "the prefix cache is automatic")] = None


class ChatCompletionContentPartRefusalParam(WireModel):
    type: Annotated[Literal["refusal"], Supported("`refusal`")]
    refusal: Annotated[str, Ignored("not shown to the model")]


ContentPart = Annotated[
    Annotated[ChatCompletionContentPartTextParam, member("text")]
    | Annotated[ChatCompletionContentPartRefusalParam, member("refusal")],
    CONTENT_PARTS.discriminator()]

Content = str | list[ContentPart]


def content_text(content: Content | None) -> str:
    """The text of a message's content: the string, or its text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, ChatCompletionContentPartTextParam))
