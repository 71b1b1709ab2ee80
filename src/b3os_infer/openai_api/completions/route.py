"""The legacy ``POST /completions`` route: prompts to tokens, choices side by side."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from ... import ids
from ...core import Usage
from ...http.accounting import admit
from ...http.cancellation import EventStream
from ...http.endpoint import as_infer_error, endpoint, opened
from ...http.requests import json_body
from ...node.chat import ChatModel
from ...node.choices import final_usage, fold_choices, merged, seeded
from ...node.completion import stream_text
from ...node.lifecycle import load_state
from ...observe.context import note_response_id
from ..decode import invalid
from ..encode import encode_chunks
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
    model = request.app.state.registry.get(legacy.model)
    max_tokens = min(legacy.base.max_tokens, model.card.max_output_tokens)
    texts = [_counted(model, p, "prompt" if len(legacy.prompts) == 1 else f"prompt[{i}]")
             for i, p in enumerate(legacy.prompts)]
    admission = await admit(request, legacy.model, sum(map(len, texts)),
                            max_tokens * legacy.n * len(texts))
    requests = [replace(legacy.base, prompt=tokens, max_tokens=max_tokens,
                        sampling=seeded(legacy.base.sampling, j))
                for tokens in texts for j in range(legacy.n)]
    so_far = [Usage() for _ in requests]
    streams = [stream_text(model, r, tally) for r, tally in zip(requests, so_far, strict=True)]
    combine = _per_prompt(legacy.n)
    events = admission.watch(merged(streams, combine), final_usage, lambda: combine(so_far))
    echoes = [_echo_text(model, p) if legacy.echo else "" for p in legacy.prompts]
    encoder = CompletionEncoder(ids.text_completion_id(), int(time.time()), legacy, echoes)
    note_response_id(encoder.completion_id)
    if not legacy.stream:
        results, usage = await fold_choices(events, len(streams))
        return Response(encoder.body(results, usage).to_json(),
                        media_type="application/json")
    opening = await opened(events, first_now=load_state(model.engine) == "loaded")
    body = encode_chunks(opening, encoder.chunks, as_infer_error)
    return EventStream(body)


def _per_prompt(n: int) -> Callable[[list[Usage]], Usage]:
    """Usage of all choices: each prompt counted once, every output."""
    def combine(finals: list[Usage]) -> Usage:
        firsts = finals[::n]
        return Usage(sum(u.input_tokens for u in firsts), sum(u.output_tokens for u in finals),
                     sum(u.cached_tokens for u in firsts))
    return combine
