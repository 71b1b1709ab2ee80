"""Routes of the OpenAI API under /v1/infer."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import ids
from ..errors import model_not_available
from ..generation.pipeline import chat_choices, plan_chat
from ..generation.served import registry_of
from ..http.allowance import allowed_models
from ..http.cancellation import EventStream
from ..http.endpoint import endpoint, infer_error_in, opened
from ..http.requests import json_body
from ..node.cards import ModelCard
from ..node.chat_model import ChatModel
from ..node.choices import fold_choices
from ..node.embedding import EmbeddingCard, EmbeddingModel
from ..node.lifecycle import load_state
from ..node.registry import ModelRegistry
from ..observe.context import note_response_id
from .completions import completions
from .decode import decode_chat_request
from .embeddings_route import create_embeddings
from .encode import ChunkEncoder, completion_body, encode_chunks
from .envelope import CHAT_PARAMS
from .responses import (
    cancel_response,
    count_input_tokens,
    create_response,
    delete_response,
    list_input_items,
    retrieve_response,
)


@endpoint
async def chat_completions(request: Request) -> Response:
    chat, options = decode_chat_request(await json_body(request))
    model = registry_of(request).get(chat.model)
    chat, prompt = plan_chat(model, chat)
    events = await chat_choices(request, model, chat, prompt, options.n)
    completion_id, created = ids.completion_id(), int(time.time())
    note_response_id(completion_id)
    if not options.stream:
        results, usage = await fold_choices(events, options.n)
        body = completion_body(completion_id, created, chat.model, results, usage,
                               options.logprobs)
        return Response(body.to_json(), media_type="application/json")
    opening = await opened(events, first_now=load_state(model.engine) == "loaded")
    encoder = ChunkEncoder(completion_id, created, chat.model,
                           include_usage=options.include_usage, logprobs=options.logprobs)
    frames = encode_chunks(opening, encoder.encode, infer_error_in(CHAT_PARAMS))
    return EventStream(frames)


def _entry(card: ModelCard | EmbeddingCard, details: dict[str, Any]) -> dict[str, Any]:
    """A model in OpenAI's list shape; ``b3os``: its kind and name, then ``details``."""
    return {"id": card.id, "object": "model", "created": card.created,
            "owned_by": card.owned_by,
            "b3os": {"kind": card.kind, "display_name": card.display_name, **details}}


def model_entry(model: ChatModel) -> dict[str, Any]:
    card = model.card
    return _entry(card, {
        "context_window": card.context_window,
        "trained_context_window": card.trained_context_window,
        "rope_scaling": "yarn" if card.trained_context_window and
        card.context_window > card.trained_context_window else None,
        "profile": card.profile,
        "device": card.device,
        "max_output_tokens": card.max_output_tokens,
        "capabilities": card.capabilities.as_dict(),
        "state": load_state(model.engine),
    })


def embedding_entry(model: EmbeddingModel) -> dict[str, Any]:
    card = model.card
    return _entry(card, {"dimensions": card.dimensions,
                         "max_input_tokens": card.max_input_tokens, "state": "loaded"})


def _entries(registry: ModelRegistry) -> dict[str, dict[str, Any]]:
    """Every model by id, chat and embedding, in the order they were configured."""
    entries = {m.card.id: model_entry(m) for m in registry.all()}
    entries.update((m.card.id, embedding_entry(m)) for m in registry.embeddings())
    return entries


@endpoint
async def list_models(request: Request) -> Response:
    key = allowed_models(request.scope)
    data = [entry for model_id, entry in _entries(registry_of(request)).items()
            if key is None or key.allows_model(model_id)]
    return JSONResponse({"object": "list", "data": data})


@endpoint
async def get_model(request: Request) -> Response:
    model_id = request.path_params["model_id"]
    entry = _entries(registry_of(request)).get(model_id)
    if entry is None:
        raise model_not_available(model_id)
    return JSONResponse(entry)


def routes(prefix: str) -> list[Route]:
    return [
        Route(prefix + "/chat/completions", chat_completions, methods=["POST"]),
        Route(prefix + "/completions", completions, methods=["POST"]),
        Route(prefix + "/responses", create_response, methods=["POST"]),
        Route(prefix + "/responses/input_tokens", count_input_tokens, methods=["POST"]),
        Route(prefix + "/responses/{response_id}", retrieve_response, methods=["GET"]),
        Route(prefix + "/responses/{response_id}", delete_response, methods=["DELETE"]),
        Route(prefix + "/responses/{response_id}/cancel", cancel_response, methods=["POST"]),
        Route(prefix + "/responses/{response_id}/input_items", list_input_items,
              methods=["GET"]),
        Route(prefix + "/embeddings", create_embeddings, methods=["POST"]),
        Route(prefix + "/models", list_models, methods=["GET"]),
        Route(prefix + "/models/{model_id:path}", get_model, methods=["GET"]),
    ]
