"""Function tools, the calls an assistant made, and ``tool_choice``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import JsonValue, Tag

from ...wire_models import Ignored, Supported, WireModel, member
from .common import matching
from .kinds import TOOL_CALL_TYPES, TOOL_CHOICE_TYPES, TOOL_TYPES

FunctionName = Annotated[str, matching(r"[a-zA-Z0-9_-]{1,64}",
                                       "should be 1 to 64 letters, digits, '_' or '-'")]


class FunctionDefinition(WireModel):
    name: Annotated[FunctionName, Supported("1 to 64 letters, digits, `_` or `-`; unique "
                                            "within `tools`")]
    description: Annotated[str | None, Supported("shown to the model")] = None
    parameters: Annotated[dict[str, JsonValue] | None, Supported(
        "a JSON Schema object that the arguments follow; absent means no arguments")] = None
    strict: Annotated[bool | None, Ignored("arguments always follow `parameters` here")
                      ] = None


class ChatCompletionFunctionToolParam(WireModel):
    type: Annotated[Literal["function"], Supported("`function`")]
    function: Annotated[FunctionDefinition, Supported("the function")]


ChatCompletionToolUnionParam = Annotated[
    Annotated[ChatCompletionFunctionToolParam, member("function")],
    TOOL_TYPES.discriminator()]


class Function(WireModel):
    """The function an earlier reply called."""

    name: Annotated[str, Supported("the function called")]
    arguments: Annotated[str, Supported("a JSON object as text")]


class ChatCompletionMessageFunctionToolCallParam(WireModel):
    id: Annotated[str, Supported("answered by a `tool` message with this `tool_call_id`")]
    type: Annotated[Literal["function"], Supported("`function`; may be left out")] = \
        "function"
    function: Annotated[Function, Supported("the call")]


ChatCompletionMessageToolCallUnionParam = Annotated[
    Annotated[ChatCompletionMessageFunctionToolCallParam, member("function")],
    TOOL_CALL_TYPES.discriminator(default="function")]


class NamedFunction(WireModel):
    name: Annotated[str, Supported("a function in `tools`")]


class ChatCompletionNamedToolChoiceParam(WireModel):
    type: Annotated[Literal["function"], Supported("`function`")]
    function: Annotated[NamedFunction, Supported("the function that must be called")]


ToolChoiceMode = Literal["none", "auto", "required"]

ChatCompletionToolChoiceOptionParam = Annotated[
    Annotated[ToolChoiceMode, Tag("mode")]
    | Annotated[ChatCompletionNamedToolChoiceParam, member("function")],
    TOOL_CHOICE_TYPES.discriminator(plain="mode")]
