"""``POST /tokenize`` as vLLM answers it, for routers that build their prefix trees from
token ids (vllm-router asks every worker before it picks one): the prompt the node would
send its engine, rendered with the model's own chat template, as token ids.

Served only on a node with ``[node] standard_api = true`` (``edge/fleet/standard_api.py``). The
two request shapes are vLLM's ``TokenizeChatRequest`` and ``TokenizeCompletionRequest``,
less what the node cannot do: a reply continued from a final assistant message, or a chat
prompt without the generation prompt.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import JsonValue
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..http.endpoint import endpoint
from ..http.requests import json_body
from ..node.chat_model import ChatModel
from ..wire_models import WireModel, decode
from .decode import decode_chat_request

PATH = "/tokenize"


class TokenizeChatRequest(WireModel):
    model: str
    messages: list[JsonValue]
    tools: list[JsonValue] | None = None
    add_generation_prompt: Literal[True] = True
    continue_final_message: Literal[False] = False
    add_special_tokens: Literal[False] = False


class TokenizeCompletionRequest(WireModel):
    model: str
    prompt: str
    add_special_tokens: bool = True


def _tokens(request: Request, body: dict[str, Any]) -> tuple[ChatModel, list[int]]:
    registry = request.app.state.registry
    if "messages" in body:
        chat = decode(TokenizeChatRequest, body)
        decoded, _ = decode_chat_request({"model": chat.model, "messages": chat.messages,
                                          **({"tools": chat.tools} if chat.tools else {})})
        model: ChatModel = registry.get(chat.model)
        return model, model.prompt(decoded).tokens
    text = decode(TokenizeCompletionRequest, body)
    model = registry.get(text.model)
    return model, model.engine.tokenize(text.prompt, add_special=text.add_special_tokens)


@endpoint
async def tokenize(request: Request) -> Response:
    model, tokens = _tokens(request, await json_body(request))
    return JSONResponse({"count": len(tokens), "max_model_len": model.card.context_window,
                         "tokens": tokens, "token_strs": None})
