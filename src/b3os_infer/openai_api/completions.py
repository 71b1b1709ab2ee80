"""The legacy ``POST /completions``: raw text in, its continuation out.

Prompts may be a string, a list of strings, token ids or a list of token-id lists; each
prompt gets ``n`` choices, numbered prompt by prompt (index = prompt * n + choice).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .. import ids
from ..core import ChatResult, Finished, TextDelta, TextPart, TextRequest, TokenLogprob, Usage
from ..fields import invalid, join
from ..http.accounting import admit
from ..http.endpoint import as_infer_error, endpoint, prepend
from ..http.requests import json_body, until_disconnect
from ..http.sse import SSE_HEADERS, data_frame
from ..node.chat import ChatModel
from ..node.choices import AllFinished, ChoiceEvent, final_usage, fold_choices, merged, seeded
from ..node.completion import stream_text
from ..policy import table_fields
from . import policy
from .decode import MAX_CHOICES, stream_options
from .encode import encode_chunks, finish_reason, usage_body
from .sampling import sampling_fields, stops

Prompt = str | list[int]


@dataclass(frozen=True)
class LegacyRequest:
    model: str
    prompts: list[Prompt]
    base: TextRequest  # everything but the prompt
    n: int
    echo: bool
    logprobs: int | None
    stream: bool
    include_usage: bool


def decode_completion_request(body: dict[str, Any]) -> LegacyRequest:
    fields = table_fields(body, policy.COMPLETIONS_FIELDS)
    model = fields.take("model", str, required=True)
    prompts = _prompts(fields.raw("prompt"))
    max_tokens = fields.integer("max_tokens", low=1)
    n = fields.integer("n", low=1, high=MAX_CHOICES) or 1
    best_of = fields.integer("best_of", low=1)
    if best_of is not None and best_of != n:
        raise invalid("best_of", "only `best_of` equal to `n` is served (every candidate "
                      "is returned)")
    logprobs = fields.integer("logprobs", low=0, high=5)
    echo = bool(fields.take("echo", bool))
    if echo and logprobs is not None:
        raise invalid("echo", "`echo` with `logprobs` would need the prompt's log-"
                      "probabilities, which are not computed")
    base = TextRequest(model=model, prompt=[], max_tokens=16 if max_tokens is None else
                       max_tokens, stop=stops(fields), sampling=sampling_fields(fields),
                       top_logprobs=logprobs)
    stream, include_usage = stream_options(fields)
    fields.finish()
    return LegacyRequest(model, prompts, base, n, echo, logprobs, stream, include_usage)


def _is_tokens(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def _prompts(raw: Any) -> list[Prompt]:
    if raw is None:
        raise invalid("prompt", "Field required")
    if isinstance(raw, str):
        return [raw]
    if _is_tokens(raw):
        return [raw]
    if isinstance(raw, list) and raw:
        for i, item in enumerate(raw):
            if not (isinstance(item, str) or _is_tokens(item)):
                raise invalid(join("prompt", i), "Input should be a string or a non-empty "
                              "array of token ids")
        return list(raw)
    raise invalid("prompt", "Input should be a string, an array of strings, an array of "
                  "token ids or an array of such arrays")


# ---- the route -------------------------------------------------------------------------


def _tokens(model: ChatModel, prompt: Prompt, path: str) -> list[int]:
    if isinstance(prompt, str):
        if not prompt:
            raise invalid(path, "the prompt is empty")
        return model.engine.tokenize(prompt, add_special=True)
    vocab = model.engine.info.vocab_size
    if any(t >= vocab for t in prompt):
        raise invalid(path, f"token ids must be below {vocab}, this model's vocabulary size")
    return list(prompt)


def _echo_text(model: ChatModel, prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return b"".join(model.engine.token_bytes(t) for t in prompt).decode("utf-8", "replace")


@endpoint
async def completions(request: Request) -> Response:
    legacy = decode_completion_request(await json_body(request))
    model = request.app.state.registry.get(legacy.model)
    max_tokens = min(legacy.base.max_tokens, model.card.max_output_tokens)
    texts = [_tokens(model, p, "prompt" if len(legacy.prompts) == 1 else join("prompt", i))
             for i, p in enumerate(legacy.prompts)]
    admission = await admit(request, legacy.model, sum(map(len, texts)),
                            max_tokens * legacy.n * len(texts))
    streams = [stream_text(model, replace(legacy.base, prompt=tokens, max_tokens=max_tokens,
                                          sampling=seeded(legacy.base.sampling, j)))
               for tokens in texts for j in range(legacy.n)]
    events = admission.watch(merged(streams, _per_prompt(legacy.n)), final_usage)
    echoes = [_echo_text(model, p) if legacy.echo else "" for p in legacy.prompts]
    shape = _Shape(ids.text_completion_id(), int(time.time()), legacy, echoes)
    if not legacy.stream:
        results, usage = await until_disconnect(request, fold_choices(events, len(streams)))
        return JSONResponse(shape.body(results, usage))
    first = await anext(events)
    body = encode_chunks(prepend(first, events), shape.chunks, as_infer_error)
    return StreamingResponse(body, media_type="text/event-stream", headers=SSE_HEADERS)


def _per_prompt(n: int) -> Callable[[list[Usage]], Usage]:
    """Usage of all choices: each prompt counted once, every output."""
    def combine(finals: list[Usage]) -> Usage:
        firsts = finals[::n]
        return Usage(sum(u.input_tokens for u in firsts), sum(u.output_tokens for u in finals),
                     sum(u.cached_tokens for u in firsts))
    return combine


# ---- the response ----------------------------------------------------------------------


class _Shape:
    """Text completion objects and chunks, with the legacy logprobs layout."""

    def __init__(self, completion_id: str, created: int, legacy: LegacyRequest,
                 echoes: list[str]) -> None:
        self.base = {"id": completion_id, "object": "text_completion", "created": created,
                     "model": legacy.model, "system_fingerprint": None}
        self.legacy = legacy
        self.echoes = echoes
        # per choice: where its next token starts, and scores awaiting their text
        self._offsets: dict[int, int] = {}
        self._pending: dict[int, list[TokenLogprob]] = {}

    def _echo(self, index: int) -> str:
        return self.echoes[index // self.legacy.n]

    def body(self, results: list[ChatResult], usage: Usage) -> dict[str, Any]:
        choices = []
        for index, result in enumerate(results):
            text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
            choices.append({"index": index, "text": self._echo(index) + text,
                            "logprobs": self._logprobs(result.logprobs or [], 0),
                            "finish_reason": finish_reason(result.stop_reason)})
        return {**self.base, "choices": choices, "usage": usage_body(usage)}

    def _logprobs(self, scored: list[TokenLogprob], offset: int) -> dict[str, Any] | None:
        if self.legacy.logprobs is None:
            return None
        offsets = []
        for item in scored:
            offsets.append(offset)
            offset += len(item.text)
        return {"tokens": [s.text for s in scored],
                "token_logprobs": [s.logprob for s in scored],
                "top_logprobs": [{text: lp for text, _, lp in s.top} for s in scored],
                "text_offset": offsets}

    def _chunk(self, index: int, text: str, finish: str | None = None,
               logprobs: dict[str, Any] | None = None) -> bytes:
        chunk: dict[str, Any] = {**self.base, "choices": [
            {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish}]}
        if self.legacy.include_usage:
            chunk["usage"] = None
        return data_frame(chunk)

    def chunks(self, item: ChoiceEvent | AllFinished) -> list[bytes]:
        if isinstance(item, AllFinished):
            frames = [data_frame({**self.base, "choices": [], "usage": usage_body(item.usage)})
                      ] if self.legacy.include_usage else []
            return frames + [data_frame("[DONE]")]
        index, event = item.index, item.event
        frames = []
        if index not in self._offsets:
            self._offsets[index], self._pending[index] = 0, []
            if self._echo(index):
                frames.append(self._chunk(index, self._echo(index)))
        if isinstance(event, TokenLogprob):
            self._pending[index].append(event)
        elif isinstance(event, TextDelta | Finished):
            scored, self._pending[index] = self._pending[index], []
            logprobs = self._logprobs(scored, self._offsets[index])
            self._offsets[index] += sum(len(s.text) for s in scored)
            if isinstance(event, TextDelta):
                frames.append(self._chunk(index, event.text, logprobs=logprobs))
            else:
                frames.append(self._chunk(index, "", finish_reason(event.stop_reason),
                                          logprobs if scored else None))
        return frames
