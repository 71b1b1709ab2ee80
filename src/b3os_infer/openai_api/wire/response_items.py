"""The items of a Responses ``input``: messages, tool calls and their outputs, reasoning.

Named after the SDK's ``ResponseInputItemParam`` members. Clients replay items as they
received them (Codex leaves out ``id`` and ``status``, and writes fields of its own), so
an item's unknown fields are accepted and ignored; its known fields carry their policy.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, JsonValue

from ...wire_models import Ignored, Supported, WireModel, member
from .response_kinds import INPUT_CONTENT, INPUT_ITEMS

REPLAYED = "replayed as the client received it; not read"


class ReplayedItem(WireModel):
    """An input item: strict types, unknown fields accepted and ignored."""

    model_config = ConfigDict(extra="ignore")


class ResponseInputTextParam(ReplayedItem):
    type: Annotated[Literal["input_text"], Supported("`input_text`")]
    text: Annotated[str, Supported("the text")]


class ResponseOutputTextParam(ReplayedItem):
    type: Annotated[Literal["output_text"], Supported("`output_text`")]
    text: Annotated[str, Supported("the text")]
    annotations: Annotated[list[JsonValue] | None, Ignored(REPLAYED)] = None
    logprobs: Annotated[list[JsonValue] | None, Ignored(REPLAYED)] = None


class ResponseOutputRefusalParam(ReplayedItem):
    type: Annotated[Literal["refusal"], Supported("`refusal`")]
    refusal: Annotated[str, Ignored("not shown to the model")]


InputContent = Annotated[
    Annotated[ResponseInputTextParam, member("input_text")]
    | Annotated[ResponseOutputTextParam, member("output_text")]
    | Annotated[ResponseOutputRefusalParam, member("refusal")],
    INPUT_CONTENT.discriminator()]

MessageRole = Literal["user", "system", "developer", "assistant"]


class EasyInputMessageParam(ReplayedItem):
    type: Annotated[Literal["message"], Supported("`message`; may be left out")] = "message"
    role: Annotated[MessageRole, Supported(
        "user, assistant; system and developer only before the first other item (they "
        "join `instructions`)")]
    content: Annotated[str | list[InputContent], Supported("a string or content parts")]
    id: Annotated[str | None, Ignored(REPLAYED)] = None
    status: Annotated[str | None, Ignored(REPLAYED)] = None
    phase: Annotated[str | None, Ignored(REPLAYED)] = None


class ResponseFunctionToolCallParam(ReplayedItem):
    type: Annotated[Literal["function_call"], Supported("`function_call`")]
    call_id: Annotated[str, Supported("answered by a `function_call_output` with this "
                                      "`call_id`")]
    name: Annotated[str, Supported("the function called")]
    arguments: Annotated[str, Supported("a JSON object as text")]
    namespace: Annotated[str | None, Supported("the namespace of the function")] = None
    id: Annotated[str | None, Ignored(REPLAYED)] = None
    status: Annotated[str | None, Ignored(REPLAYED)] = None


ToolOutput = str | list[InputContent]


class FunctionCallOutput(ReplayedItem):
    type: Annotated[Literal["function_call_output"], Supported("`function_call_output`")]
    call_id: Annotated[str, Supported("the call answered; one that matches no earlier "
                                      "call is refused, as on OpenAI")]
    output: Annotated[ToolOutput, Supported("a string or text parts")]
    id: Annotated[str | None, Ignored(REPLAYED)] = None
    status: Annotated[str | None, Ignored(REPLAYED)] = None


class ResponseCustomToolCallParam(ReplayedItem):
    type: Annotated[Literal["custom_tool_call"], Supported("`custom_tool_call`")]
    call_id: Annotated[str, Supported("answered by a `custom_tool_call_output`")]
    name: Annotated[str, Supported("the custom tool called")]
    input: Annotated[str, Supported("the text input the model wrote")]
    namespace: Annotated[str | None, Supported("the namespace of the tool")] = None
    id: Annotated[str | None, Ignored(REPLAYED)] = None
    status: Annotated[str | None, Ignored(REPLAYED)] = None


class ResponseCustomToolCallOutputParam(ReplayedItem):
    type: Annotated[Literal["custom_tool_call_output"], Supported(
        "`custom_tool_call_output`")]
    call_id: Annotated[str, Supported("the call answered")]
    output: Annotated[ToolOutput, Supported("a string or text parts")]
    id: Annotated[str | None, Ignored(REPLAYED)] = None


class Summary(ReplayedItem):
    type: Annotated[Literal["summary_text"], Supported("`summary_text`")]
    text: Annotated[str, Supported("reasoning text")]


class Content(ReplayedItem):
    type: Annotated[Literal["reasoning_text"], Supported("`reasoning_text`")]
    text: Annotated[str, Supported("reasoning text")]


class ResponseReasoningItemParam(ReplayedItem):
    type: Annotated[Literal["reasoning"], Supported("`reasoning`")]
    summary: Annotated[list[Summary], Supported(
        "read when there is neither `encrypted_content` nor `content`")]
    content: Annotated[list[Content] | None, Supported(
        "the reasoning text, read when there is no `encrypted_content`")] = None
    encrypted_content: Annotated[str | None, Supported(
        "the reasoning as this server sealed it (`include: [\"reasoning.encrypted_"
        "content\"]`); verified, an edited one is refused")] = None
    id: Annotated[str | None, Ignored(REPLAYED)] = None
    status: Annotated[str | None, Ignored(REPLAYED)] = None


class ResponseFunctionWebSearchParam(ReplayedItem):
    """A web search this server ran in an earlier turn, replayed."""

    type: Annotated[Literal["web_search_call"], Supported("`web_search_call`")]
    id: Annotated[str, Supported("the search")]
    action: Annotated[dict[str, JsonValue], Supported(
        "its `query` and the `sources` it found are rendered back to the model (their "
        "snippets are not kept in the item)")]
    status: Annotated[str | None, Supported("`failed`: rendered back as a failed search")
                      ] = None


ResponseInputItemParam = Annotated[
    Annotated[EasyInputMessageParam, member("message")]
    | Annotated[ResponseFunctionToolCallParam, member("function_call")]
    | Annotated[FunctionCallOutput, member("function_call_output")]
    | Annotated[ResponseCustomToolCallParam, member("custom_tool_call")]
    | Annotated[ResponseCustomToolCallOutputParam, member("custom_tool_call_output")]
    | Annotated[ResponseReasoningItemParam, member("reasoning")]
    | Annotated[ResponseFunctionWebSearchParam, member("web_search_call")],
    INPUT_ITEMS.discriminator(default="message")]

ITEM_MODELS = (EasyInputMessageParam, ResponseFunctionToolCallParam, FunctionCallOutput,
               ResponseCustomToolCallParam, ResponseCustomToolCallOutputParam,
               ResponseReasoningItemParam, ResponseFunctionWebSearchParam)
