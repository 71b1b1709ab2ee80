"""An engine reached over HTTP: vLLM, SGLang, llama.cpp's server or llama-cpp-python's.

The node renders and tokenizes; this adapter sends the token prompt to the engine's
streaming ``/v1/completions`` and turns its chunks into the seam's events. Closing the
event stream closes the HTTP stream, which is how each of these engines learns that a
request is abandoned (they abort it on disconnect). Lazy grammars and reasoning budgets
are done by splicing requests (``splice.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

import httpx

from ...errors import EngineUnavailable, InferError, InternalError, InvalidRequest, Overloaded
from ..base import (
    NOT_A_TOKEN,
    Admitted,
    EngineEvent,
    EngineInfo,
    FinishReason,
    GenerationDone,
    GenerationRequest,
    TokenEvent,
    check_fits,
)
from ..tokenizer import Tokenizer
from .check import Mismatch, check
from .flavours import FLAVOURS, Piece, completion_body, parse_chunk
from .splice import Cut, Director

log = logging.getLogger(__name__)

UNKNOWN_TOKEN = -2   # the engine streamed a token's text but not its id
_HEALTH_EVERY_S = 2.0
READ_TIMEOUT_S = 300.0   # silence from the engine for this long fails the request


@dataclass
class _Progress:
    """Where a generation stands across the upstream requests it is spliced from."""

    context: list[int]
    kept: str = ""
    generated: int = 0
    cached: int = 0
    admitted: bool = False
    done: bool = False
    cut: Cut | None = None


@dataclass
class UpstreamSettings:
    url: str
    flavour: str
    served_name: str
    context_window: int
    api_key: str | None = None


class UpstreamEngine:
    def __init__(self, settings: UpstreamSettings, tokenizer: Tokenizer,
                 vocab_size: int) -> None:
        self.settings = settings
        self.flavour = FLAVOURS[settings.flavour]
        self.tokenizer = tokenizer
        self.info = EngineInfo(context_window=settings.context_window, vocab_size=vocab_size,
                               description=f"{settings.flavour} at {settings.url}",
                               applies_grammars=True)
        self._client: httpx.AsyncClient | None = None
        self._watch: asyncio.Task[None] | None = None
        self._up = False
        self._mismatch: Mismatch | None = None
        self._running = 0
        self._warned_count = False
        self._warned_cache = False

    # ---- tokens and lifecycle -----------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return list(self.tokenizer.tokenize(text, add_special=add_special))

    def token_bytes(self, token: int) -> bytes:
        return bytes(self.tokenizer.token_bytes(token))

    async def start(self) -> None:
        headers = {"authorization": f"Bearer {self.settings.api_key}"} \
            if self.settings.api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.settings.url.rstrip("/"), headers=headers,
            timeout=httpx.Timeout(10.0, read=READ_TIMEOUT_S),
            limits=httpx.Limits(max_connections=None))
        # once before serving, so that the start log says what is wrong
        await self._check_listing()
        self._watch = asyncio.create_task(self._watch_health())

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._client is not None:
            await self._client.aclose()

    def healthy(self) -> bool:
        return self._up and self._mismatch is None

    def problem(self) -> str | None:
        """Why the engine cannot serve the model as configured, if it cannot."""
        return self._mismatch.message if self._mismatch else None

    def load(self) -> dict[str, int]:
        return {"active": self._running, "waiting": 0}

    async def _watch_health(self) -> None:
        assert self._client is not None
        while True:
            was_up = self._up
            try:
                probe = await self._client.get(self.flavour.health_path, timeout=5)
                self._up = probe.status_code == 200
            except httpx.HTTPError:
                self._up = False
            # the listing again when the engine comes (back) up, perhaps restarted with
            # another model, and while it is wrong; not on every probe: llama-cpp-python's
            # server interrupts a running generation for any other request
            if self._up and (not was_up or self._mismatch is not None):
                await self._check_listing()
            await asyncio.sleep(_HEALTH_EVERY_S)

    async def _check_listing(self) -> None:
        assert self._client is not None
        settings = self.settings
        found = await check(self._client, settings.url, settings.served_name,
                            settings.context_window, self.flavour.tokenize,
                            lambda text: self.tokenize(text, add_special=False))
        if found != self._mismatch:
            if found is not None:
                log.error("%s cannot be served: %s", settings.served_name, found.message)
            else:
                log.info("the engine at %s serves %s as configured", settings.url,
                         settings.served_name)
        self._mismatch = found

    # ---- generation ------------------------------------------------------------------

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]:
        check_fits(request, self.info.context_window)
        if self._mismatch is not None:
            raise EngineUnavailable(self._mismatch.message, code=self._mismatch.code)
        director = Director(request.grammar, request.reasoning)
        state = _Progress(list(request.prompt))
        self._running += 1
        try:
            while True:
                state.cut = None
                async with aclosing(self._pieces(request, state, director)) as events:
                    async for event in events:
                        yield event
                if state.done:
                    return
                if state.cut is None:
                    raise InternalError("the model service ended its stream without a "
                                        "finish reason")
                for event in self._splice(request, state, state.cut):
                    yield event
                if state.generated >= request.max_tokens:
                    yield GenerationDone("length", len(request.prompt), state.cached,
                                         state.generated)
                    return
        finally:
            self._running -= 1

    async def _pieces(self, request: GenerationRequest, state: _Progress,
                      director: Director) -> AsyncGenerator[EngineEvent, None]:
        """One upstream request's events; it sets ``state.done`` or ``state.cut``.

        After the finish reason the stream goes on to its end: vLLM and SGLang send the
        usage (``prompt_tokens_details.cached_tokens``) in a last chunk of its own."""
        segment = self._segment(request, state.context, request.max_tokens - state.generated,
                                director.active_grammar())
        finish: FinishReason | None = None
        async with aclosing(segment):
            async for piece in segment:
                if isinstance(piece, int):   # the engine took the request
                    if not state.admitted:
                        state.admitted, state.cached = True, piece
                        yield Admitted(len(request.prompt), piece)
                    continue
                if piece.cached_tokens is not None:
                    state.cached = piece.cached_tokens
                if finish is not None:
                    continue
                events, finish, cut = _take(piece, state, director)
                for event in events:
                    yield event
                if cut is not None:
                    state.cut = cut
                    return
        if finish is not None:
            state.done = True
            yield GenerationDone(finish, len(request.prompt), state.cached, state.generated)

    def _splice(self, request: GenerationRequest, state: _Progress,
                cut: Cut) -> list[TokenEvent]:
        """The forced tokens as events, and the next request's prompt."""
        forced = cut.forced[:max(request.max_tokens - state.generated, 0)]
        state.generated += len(forced)
        state.context += self.tokenize(state.kept, add_special=False) + forced
        state.kept = ""
        return [TokenEvent(token=t, text=self.token_bytes(t).decode("utf-8", "replace"))
                for t in forced]

    async def _segment(self, request: GenerationRequest, context: list[int], max_tokens: int,
                       grammar: str | None) -> AsyncGenerator[Piece | int, None]:
        """One upstream request: first the cached prompt tokens (an int), then pieces."""
        if self._client is None:
            raise InternalError("the engine is not running")
        prompt: list[int] | str = context if self.flavour.token_prompt \
            else self.tokenizer.detokenize(context)
        body = completion_body(self.flavour, model=self.settings.served_name, prompt=prompt,
                               max_tokens=max_tokens, sampling=request.sampling,
                               grammar=grammar, top_logprobs=request.top_logprobs)
        try:
            async with self._client.stream("POST", "/v1/completions", json=body) as response:
                if response.status_code != 200:
                    raise _upstream_error(response.status_code, await response.aread(),
                                          response.headers.get("retry-after"))
                yield 0
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    piece = parse_chunk(json.loads(data))
                    self._check_count(piece, len(context))
                    self._check_cache_report(piece)
                    yield piece
        except httpx.HTTPError as exc:
            raise InternalError("the model service failed",
                                detail=f"{self.settings.url}: {exc!r}") from exc

    def _check_count(self, piece: Piece, ours: int) -> None:
        if piece.prompt_tokens is not None and piece.prompt_tokens != ours and \
                not self._warned_count:
            self._warned_count = True
            log.warning("the model service counted %d prompt tokens where the node counted "
                        "%d: its tokenizer differs from the node's", piece.prompt_tokens, ours)

    def _check_cache_report(self, piece: Piece) -> None:
        """Says once that the engine's usage has no cached tokens when it can have them:
        vLLM leaves them out unless started with --enable-prompt-tokens-details, SGLang
        unless with --enable-cache-report, and every reply would then say none was cached."""
        option = self.flavour.cache_report_option
        if option and piece.prompt_tokens is not None and piece.cached_tokens is None and \
                not self._warned_cache:
            self._warned_cache = True
            log.warning("the model service at %s reports no cached prompt tokens, so every "
                        "reply says 0 were cached: start %s with %s", self.settings.url,
                        self.flavour.name, option)


def _reason(finish: str) -> FinishReason:
    if finish == "length":
        return "length"
    if finish == "stop":
        return "eog"
    raise InternalError("the model service ended the request",
                        detail=f"finish reason {finish!r}")


def _take(piece: Piece, state: _Progress, director: Director
          ) -> tuple[list[TokenEvent], FinishReason | None, Cut | None]:
    """One piece of generated text through the director: the events it makes, the finish
    reason when the reply ends here, and the cut when the director splices."""
    state.generated += piece.count
    text, cut = director.feed(piece.text, piece.count)
    state.kept += text
    events = _events(piece, text)
    if piece.finish is None or cut is not None:
        return events, None, cut
    text, cut = director.finish(_reason(piece.finish))
    state.kept += text
    if text:
        events.append(TokenEvent(token=NOT_A_TOKEN, text=text))
    return events, (_reason(piece.finish) if cut is None else None), cut


def _events(piece: Piece, text: str) -> list[TokenEvent]:
    """One event per token where the engine names them, the text on the last one."""
    ids = piece.token_ids or (UNKNOWN_TOKEN,) * max(piece.count, 1 if text else 0)
    if not ids:
        return []
    events = []
    for index, token in enumerate(ids):
        logprob = piece.logprobs[index] if index < len(piece.logprobs) else None
        top = piece.top[index] if index < len(piece.top) else ()
        events.append(TokenEvent(token=token, text=text if index == len(ids) - 1 else "",
                                 logprob=logprob, top=top))
    return events


def _upstream_error(status: int, body: bytes, retry_after: str | None) -> InferError:
    message = _message(body)
    if status in (429, 503):
        seconds = float(retry_after) if retry_after and retry_after.isdigit() else None
        return Overloaded("the model service is overloaded; retry shortly",
                          retry_after=seconds, detail=f"{status}: {message}")
    if status in (400, 413, 422):
        return InvalidRequest(f"the model service refused the request: {message}")
    return InternalError("the model service failed", detail=f"{status}: {message}")


def _message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:500]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:500]
    if isinstance(error, str):
        return error[:500]
    detail = data.get("detail") if isinstance(data, dict) else None
    return str(detail or data)[:500]
