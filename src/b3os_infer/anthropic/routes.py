"""Routes of the Anthropic Messages API under /v1/infer/v1."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import ids
from ..errors import NotFound
from ..generation.pipeline import chat_reply, plan_chat
from ..generation.served import registry_of
from ..http.allowance import allowed_models, allows_scope
from ..http.cancellation import EventStream
from ..http.endpoint import as_infer_error, endpoint, opened
from ..http.requests import json_body, request_id
from ..node.chat_model import ChatModel
from ..node.context_edits import PromptCounter, edit_context
from ..node.folding import fold
from ..node.lifecycle import load_state
from ..node.server_tools.scope import SCOPE, service_for
from ..node.server_tools.tool_run import ServerTools
from ..observe.context import note_response_id
from ..pagination import page_window
from .decode import decode_count_tokens_request, decode_messages_request
from .diagnostics import diagnosis
from .encode import MessageStreamEncoder, capabilities_of, encode_stream, message_of
from .wire.responses import (
    CountTokensContextManagement,
    MessageTokensCount,
    ModelInfo,
    ModelListPage,
    ModelResidency,
    ResponseModel,
)


def _json(body: ResponseModel) -> Response:
    return Response(body.to_json(), media_type="application/json")


@endpoint
async def create_message(request: Request) -> Response:
    chat, stream = decode_messages_request(await json_body(request))
    model = registry_of(request).get(chat.model)
    prompts = PromptCounter(model.prompt)
    edited = edit_context(chat, prompts.count)
    chat, prompt = plan_chat(model, edited.request, prompts.prompt)
    tools = service_for(chat, allows_scope(request.scope, SCOPE),
                        getattr(request.app.state, "server_tools", None))
    events = await chat_reply(request, model, chat, prompt, tools)
    message_id = ids.message_id()
    note_response_id(message_id)
    diagnose = diagnosis(request.app.state.prompt_prints, chat, message_id, len(prompt.tokens))
    if not stream:
        result = await fold(events)
        return _json(message_of(message_id, chat.model, result, diagnose(result.usage),
                                edited))
    opening = await opened(events, first_now=load_state(model.engine) == "loaded")
    encoder = MessageStreamEncoder(message_id, chat.model, diagnose, edited)
    body = encode_stream(opening, encoder, request_id(request), as_infer_error)
    return EventStream(body)


@endpoint
async def count_tokens(request: Request) -> Response:
    chat = decode_count_tokens_request(await json_body(request))
    model = registry_of(request).get(chat.model)
    edited = edit_context(chat, model.count_tokens)
    tokens = edited.tokens if edited.tokens is not None else model.count_tokens(edited.request)
    if chat.context_edits is None:
        return _json(MessageTokensCount(input_tokens=tokens))
    original = edited.original_tokens if edited.original_tokens is not None else tokens
    return _json(MessageTokensCount(input_tokens=tokens, context_management=(
        CountTokensContextManagement(original_input_tokens=original))))


def model_info(model: ChatModel, searches: bool = False) -> ModelInfo:
    """``searches``: the node has a search backend, so web_search tools find something."""
    card = model.card
    created = datetime.fromtimestamp(card.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ModelInfo(id=card.id, display_name=card.display_name, created_at=created,
                     max_input_tokens=card.context_window, max_tokens=card.max_output_tokens,
                     capabilities=capabilities_of(card.capabilities, searches),
                     b3os=ModelResidency(state=load_state(model.engine)))


def _searches(request: Request) -> bool:
    service: ServerTools | None = getattr(request.app.state, "server_tools", None)
    return service is not None and service.search is not None


def _page(infos: list[ModelInfo], request: Request) -> ModelListPage:
    start, end, has_more = page_window([info.id for info in infos], request.query_params)
    page = infos[start:end]
    return ModelListPage(data=page, has_more=has_more,
                         first_id=page[0].id if page else None,
                         last_id=page[-1].id if page else None)


@endpoint
async def list_models(request: Request) -> Response:
    key = allowed_models(request.scope)
    infos = [model_info(m, _searches(request)) for m in registry_of(request).all()
             if key is None or key.allows_model(m.card.id)]
    return _json(_page(infos, request))


@endpoint
async def get_model(request: Request) -> Response:
    model_id = request.path_params["model_id"]
    try:
        model = registry_of(request).get(model_id)
    except NotFound:
        raise NotFound(f"model: {model_id} is not served on this node",
                       code="model_not_available", param="model_id") from None
    return _json(model_info(model, _searches(request)))


def routes(prefix: str) -> list[Route]:
    return [
        Route(prefix + "/v1/messages", create_message, methods=["POST"]),
        Route(prefix + "/v1/messages/count_tokens", count_tokens, methods=["POST"]),
        Route(prefix + "/v1/models", list_models, methods=["GET"]),
        Route(prefix + "/v1/models/{model_id:path}", get_model, methods=["GET"]),
    ]
