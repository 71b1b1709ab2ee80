"""The legacy ``POST /completions`` route: prompts to tokens, choices side by side."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from ... import ids
from ...generation.pipeline import text_choices
from ...generation.served import registry_of
from ...http.cancellation import EventStream
from ...http.endpoint import endpoint, infer_error_in, opened
from ...http.requests import json_body
from ...node.chat_model import ChatModel
from ...node.choices import fold_choices
from ...node.lifecycle import load_state
from ...observe.context import note_response_id
from ..decode import invalid
from ..encode import encode_chunks
from ..envelope import COMPLETIONS_PARAMS
from .decode import Prompt, decode_completion_request
from .encode import CompletionEncoder


def _tokens(model: ChatModel, prompt: Prompt, path: str) -> list[int]:
    if isinstance(prompt, str):
        if not prompt:
            raise invalid(path, "the prompt is empty")
        return model.engine.tokenize(prompt, add_special=True)
    vocab = model.engine.info.vocab_size
    if any(t >= vocab for t in prompt):
        raise invalid(path, f"token ids must be below {vocab}, this model's vocabulary size")
    return list(prompt)


def _counted(model: ChatModel, prompt: Prompt, path: str) -> list[int]:
    """The prompt's tokens, which must fit the window: a prompt past it is refused before
    admission (it takes nothing from the limits), streamed or not."""
    tokens = _tokens(model, prompt, path)
    model.room(tokens, param=path)
    return tokens


def _echo_text(model: ChatModel, prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return b"".join(model.engine.token_bytes(t) for t in prompt).decode("utf-8", "replace")


@endpoint
async def completions(request: Request) -> Response:
    legacy = decode_completion_request(await json_body(request))
    model = registry_of(request).get(legacy.model)
    texts = [_counted(model, p, "prompt" if len(legacy.prompts) == 1 else f"prompt[{i}]")
             for i, p in enumerate(legacy.prompts)]
    events = await text_choices(request, model, texts, legacy.base, legacy.n)
    echoes = [_echo_text(model, p) if legacy.echo else "" for p in legacy.prompts]
    encoder = CompletionEncoder(ids.text_completion_id(), int(time.time()), legacy, echoes)
    note_response_id(encoder.completion_id)
    if not legacy.stream:
        results, usage = await fold_choices(events, len(texts) * legacy.n)
        return Response(encoder.body(results, usage).to_json(),
                        media_type="application/json")
    opening = await opened(events, first_now=load_state(model.engine) == "loaded")
    body = encode_chunks(opening, encoder.chunks, infer_error_in(COMPLETIONS_PARAMS))
    return EventStream(body)
