"""The messages of a chat, one model per role (the kind table ``MESSAGE_ROLES``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import JsonValue

from ...wire_models import Ignored, Refused, Supported, WireModel, member
from .content import Content
from .kinds import MESSAGE_ROLES
from .tools import ChatCompletionMessageToolCallUnionParam

NAME_IGNORED = "participant names are not shown to the model"


class ChatCompletionSystemMessageParam(WireModel):
    role: Annotated[Literal["system"], Supported("`system`")]
    content: Annotated[Content, Supported("a string or text parts")]
    name: Annotated[str | None, Ignored(NAME_IGNORED)] = None


class ChatCompletionDeveloperMessageParam(WireModel):
    role: Annotated[Literal["developer"], Supported("`developer`")]
    content: Annotated[Content, Supported("a string or text parts")]
    name: Annotated[str | None, Ignored(NAME_IGNORED)] = None


class ChatCompletionUserMessageParam(WireModel):
    role: Annotated[Literal["user"], Supported("`user`")]
    content: Annotated[Content, Supported("a string or content parts")]
    name: Annotated[str | None, Ignored(NAME_IGNORED)] = None


class ChatCompletionAssistantMessageParam(WireModel):
    role: Annotated[Literal["assistant"], Supported("`assistant`")]
    content: Annotated[Content | None, Supported(
        "a string or text parts; may be null when there are `tool_calls`")] = None
    tool_calls: Annotated[list[ChatCompletionMessageToolCallUnionParam] | None, Supported(
        "`function` calls, `arguments` a JSON object as text; each answered by a `tool` "
        "message")] = None
    reasoning_content: Annotated[str | None, Supported(
        "earlier reasoning, rendered back the way the template expects")] = None
    reasoning: Annotated[str | None, Supported(
        "the other spelling of `reasoning_content`")] = None
    refusal: Annotated[str | None, Ignored("not shown to the model")] = None
    name: Annotated[str | None, Ignored(NAME_IGNORED)] = None
    audio: Annotated[JsonValue | None, Refused("no audio")] = None
    function_call: Annotated[JsonValue | None, Refused("deprecated: use `tool_calls`")
                             ] = None


class ChatCompletionToolMessageParam(WireModel):
    role: Annotated[Literal["tool"], Supported("`tool`")]
    content: Annotated[Content, Supported("the tool's result: a string or text parts")]
    tool_call_id: Annotated[str, Supported("the call answered")]
    name: Annotated[str | None, Ignored(NAME_IGNORED)] = None


ChatCompletionMessageParam = Annotated[
    Annotated[ChatCompletionSystemMessageParam, member("system")]
    | Annotated[ChatCompletionDeveloperMessageParam, member("developer")]
    | Annotated[ChatCompletionUserMessageParam, member("user")]
    | Annotated[ChatCompletionAssistantMessageParam, member("assistant")]
    | Annotated[ChatCompletionToolMessageParam, member("tool")],
    MESSAGE_ROLES.discriminator()]

MESSAGE_MODELS = (ChatCompletionSystemMessageParam, ChatCompletionDeveloperMessageParam,
                  ChatCompletionUserMessageParam, ChatCompletionAssistantMessageParam,
                  ChatCompletionToolMessageParam)
