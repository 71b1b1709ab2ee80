"""Routes of the OpenAI API under /v1/infer."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import ids
from ..http.accounting import admit
from ..http.allowance import allowed_models
from ..http.endpoint import as_infer_error, endpoint, prepend
from ..http.requests import json_body, until_disconnect
from ..http.sse import SSE_HEADERS
from ..node.chat import ChatModel
from ..node.choices import final_usage, fold_choices, merged, seeded
from ..node.registry import ModelRegistry
from .completions import completions
from .decode import decode_chat_request
from .encode import ChunkEncoder, completion_body, encode_chunks
from .responses import (
    cancel_response,
    count_input_tokens,
    create_response,
    delete_response,
    list_input_items,
    retrieve_response,
)


def _registry(request: Request) -> ModelRegistry:
    registry: ModelRegistry = request.app.state.registry
    return registry


@endpoint
async def chat_completions(request: Request) -> Response:
    chat, options = decode_chat_request(await json_body(request))
    model = _registry(request).get(chat.model)
    chat.max_tokens = min(chat.max_tokens, model.card.max_output_tokens)
    prompt = model.prompt(chat)
    admission = await admit(request, chat.model, len(prompt.tokens),
                            chat.max_tokens * options.n)
    streams = [model.stream(replace(chat, sampling=seeded(chat.sampling, i)), prompt)
               for i in range(options.n)]
    events = admission.watch(merged(streams), final_usage)
    completion_id, created = ids.completion_id(), int(time.time())
    if not options.stream:
        results, usage = await until_disconnect(request, fold_choices(events, options.n))
        body = completion_body(completion_id, created, chat.model, results, usage,
                               options.logprobs)
        return Response(body.to_json(), media_type="application/json")
    first = await anext(events)
    encoder = ChunkEncoder(completion_id, created, chat.model,
                           include_usage=options.include_usage, logprobs=options.logprobs)
    frames = encode_chunks(prepend(first, events), encoder.encode, as_infer_error)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


def model_entry(model: ChatModel) -> dict[str, Any]:
    card = model.card
    return {
        "id": card.id,
        "object": "model",
        "created": card.created,
        "owned_by": card.owned_by,
        "b3os": {
            "kind": card.kind,
            "display_name": card.display_name,
            "context_window": card.context_window,
            "trained_context_window": card.trained_context_window,
            "rope_scaling": "yarn" if card.trained_context_window and
            card.context_window > card.trained_context_window else None,
            "profile": card.profile,
            "max_output_tokens": card.max_output_tokens,
            "capabilities": card.capabilities.as_dict(),
        },
    }


@endpoint
async def list_models(request: Request) -> Response:
    key = allowed_models(request.scope)
    data = [model_entry(m) for m in _registry(request).all()
            if key is None or key.allows_model(m.card.id)]
    return JSONResponse({"object": "list", "data": data})


@endpoint
async def get_model(request: Request) -> Response:
    model = _registry(request).get(request.path_params["model_id"])
    return JSONResponse(model_entry(model))


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
        Route(prefix + "/models", list_models, methods=["GET"]),
        Route(prefix + "/models/{model_id:path}", get_model, methods=["GET"]),
    ]
