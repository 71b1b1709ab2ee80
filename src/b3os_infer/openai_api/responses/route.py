"""``POST /responses``: the Responses API on the same models, keys, limits and ledger as
chat completions; streamed as named server-sent events with ``sequence_number``. A
finished response is kept (``store``) before its last event leaves (``stored.py``)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from pydantic import BaseModel, JsonValue
from starlette.requests import Request
from starlette.responses import Response

from ...core import ChatEvent, ChatRequest
from ...errors import InferError
from ...generation.pipeline import chat_reply, plan_chat
from ...generation.served import registry_of
from ...http.allowance import allows_scope
from ...http.cancellation import EventStream
from ...http.endpoint import as_infer_error, endpoint
from ...http.requests import json_body
from ...http.sse import PING_COMMENT, named_frame, with_pings
from ...node.chat_model import ChatModel
from ...node.server_tools.scope import SCOPE
from ...node.server_tools.tool_run import ServerTools
from ...observe.context import note_response_id
from ..wire.response_create import ResponseCreateParams
from ..wire.response_objects import InputTokenCount, ResponseStreamEvent
from ..wire.response_objects import Response as ResponseBody
from .decode import decode_params, response_request
from .output import ResponseBuilder, item_id
from .stored import keeping


def _dump(value: BaseModel | str | None) -> JsonValue:
    if value is None or isinstance(value, str):
        return value
    dumped: JsonValue = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _head(params: ResponseCreateParams, max_tokens: int) -> ResponseBody:
    """The response as it starts: empty output, and the request's settings echoed."""
    text = _dump(params.text) if params.text and params.text.format else None
    return ResponseBody(
        id=item_id("resp"), created_at=int(time.time()), status="in_progress",
        model=params.model, output=[], instructions=params.instructions,
        tools=[_dump(t) for t in params.tools or []],
        tool_choice=_dump(params.tool_choice) or "auto",
        parallel_tool_calls=params.parallel_tool_calls is not False,
        temperature=1.0 if params.temperature is None else params.temperature,
        top_p=1.0 if params.top_p is None else params.top_p,
        max_output_tokens=max_tokens, reasoning=_dump(params.reasoning) or {},
        text=text or {"format": {"type": "text"}},
        store=params.store is not False, metadata=params.metadata or {},
        previous_response_id=params.previous_response_id)


def _frame(event: ResponseStreamEvent, number: int) -> bytes:
    event.sequence_number = number
    return named_frame(event.type, event.to_json())


Ended = Callable[[ResponseBody], Awaitable[None]]


async def _frames(builder: ResponseBuilder, events: AsyncGenerator[ChatEvent, None],
                  ended: Ended) -> AsyncIterator[bytes]:
    number = 0
    pending = builder.start()
    try:
        async for event in events:
            pending += builder.feed(event)
            if builder.response.status != "in_progress":
                continue    # the end: its events leave once the response is kept
            for item in pending:
                yield _frame(item, number)
                number += 1
            pending = []
    except Exception as exc:  # noqa: BLE001 - every failure reaches the client as an event
        pending += builder.fail(as_infer_error(exc))
    if builder.response.status != "in_progress":
        await ended(builder.response)
    for item in pending:
        yield _frame(item, number)
        number += 1


async def _whole(builder: ResponseBuilder, events: AsyncGenerator[ChatEvent, None],
                 ended: Ended) -> ResponseBody:
    async for event in events:
        builder.feed(event)
    await ended(builder.response)
    return builder.response


Reply = AsyncGenerator[ChatEvent, None]


async def _generation(request: Request, model: ChatModel, chat: ChatRequest,
                      tools: ServerTools | None) -> tuple[ChatRequest, Reply]:
    """The request with its cap decided, and the reply's events, admitted under the key's
    limits. A prompt past the window takes nothing from them and fails as the response
    does (a stream's ``response.failed``, the event Codex acts on)."""
    chat, prompt = plan_chat(model, chat)
    try:
        model.room(prompt.tokens)
    except InferError as too_long:
        return chat, _refused(too_long)
    return chat, await chat_reply(request, model, chat, prompt, tools)


async def _refused(error: InferError) -> Reply:
    raise error
    yield  # pragma: no cover - makes this a generator


def _searches(request: Request) -> ServerTools | None:
    """The node's server tools where a ``web_search`` tool runs for this request: a search
    backend is configured and the key has the scope. Elsewhere the tool is left out of the
    prompt, as Codex, which declares it in every request, expects of a server without it."""
    service: ServerTools | None = getattr(request.app.state, "server_tools", None)
    if service is None or service.search is None or not allows_scope(request.scope, SCOPE):
        return None
    return service


@endpoint
async def count_input_tokens(request: Request) -> Response:
    """The prompt's tokens, as the same request's ``usage.input_tokens``; free."""
    params = decode_params(await json_body(request))
    model: ChatModel = registry_of(request).get(params.model)
    context = await keeping(request, params.previous_response_id, False, params.input)
    chat, _ = response_request(params, model.signer, context.prior,
                               search=_searches(request) is not None)
    count = InputTokenCount(input_tokens=model.count_tokens(chat))
    return Response(count.to_json(), media_type="application/json")


@endpoint
async def create_response(request: Request) -> Response:
    params = decode_params(await json_body(request))
    model: ChatModel = registry_of(request).get(params.model)
    kept = await keeping(request, params.previous_response_id, params.store is not False,
                         params.input)
    tools = _searches(request)
    chat, options = response_request(params, model.signer, kept.prior,
                                     search=tools is not None)
    chat, events = await _generation(request, model, chat, tools)
    builder = ResponseBuilder(_head(params, model.cap(chat)), options.names,
                              encrypted=options.encrypted, summaries=options.summaries)
    note_response_id(builder.response.id)
    if not options.stream:
        body = await _whole(builder, events, kept.kept)
        return Response(body.to_json(), media_type="application/json")
    frames = with_pings(_frames(builder, events, kept.kept), PING_COMMENT)
    return EventStream(frames)

