"""A chat model on the node: template, tokens, context checks, stops and usage.

Both wire formats come here with a neutral ``ChatRequest``; streaming and
non-streaming replies are the same event stream, folded or not.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ..core import (
    ChatEvent,
    ChatRequest,
    ChatResult,
    Finished,
    Message,
    Started,
    StopReason,
    TextDelta,
    Usage,
    merge_turns,
)
from ..engine.base import Engine, GenerationDone, GenerationRequest
from ..errors import InvalidRequest
from .chat_template import ChatTemplate
from .models import ModelCard
from .stops import StopMatcher


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: list[int]


@dataclass
class ChatModel:
    card: ModelCard
    engine: Engine
    template: ChatTemplate

    # ---- prompt --------------------------------------------------------------

    def render(self, request: ChatRequest) -> str:
        messages = merge_turns(request.messages)
        if not messages:
            raise InvalidRequest("messages: at least one message is required", param="messages")
        turns: list[dict[str, Any]] = []
        if request.system:
            turns.append({"role": "system", "content": request.system})
        turns.extend({"role": m.role, "content": m.text} for m in messages)
        if messages[-1].role == "assistant":
            return self._render_prefill(turns, messages[-1])
        return self.template.render(turns, add_generation_prompt=True)

    def _render_prefill(self, turns: list[dict[str, Any]], last: Message) -> str:
        """Render so that the reply continues the final assistant message."""
        rendered = self.template.render(turns, add_generation_prompt=False)
        prefix = last.text
        cut = rendered.rfind(prefix) if prefix else -1
        if cut < 0:
            raise InvalidRequest("the final assistant message could not be continued with "
                                 "this model's chat template", param="messages")
        return rendered[: cut + len(prefix)]

    def prompt(self, request: ChatRequest) -> Prompt:
        text = self.render(request)
        return Prompt(text, self.engine.tokenize(text, add_special=False))

    def count_tokens(self, request: ChatRequest) -> int:
        return len(self.prompt(request).tokens)

    # ---- generation ------------------------------------------------------------

    def _check_window(self, prompt: Prompt) -> int:
        window = self.card.context_window
        if len(prompt.tokens) >= window:
            raise InvalidRequest(f"prompt is too long: {len(prompt.tokens)} tokens > "
                                 f"{window - 1} maximum", code="context_length_exceeded",
                                 param="messages")
        return window - len(prompt.tokens)

    async def stream(self, request: ChatRequest,
                     prompt: Prompt | None = None) -> AsyncGenerator[ChatEvent, None]:
        """The reply as events; pass ``prompt`` when it was already counted."""
        prompt = prompt or self.prompt(request)
        room = self._check_window(prompt)
        generation = GenerationRequest(prompt=prompt.tokens,
                                       max_tokens=min(request.max_tokens, room),
                                       sampling=request.sampling)
        stops = StopMatcher(request.stop)
        generated = 0
        yield Started(Usage(input_tokens=len(prompt.tokens)))
        events = self.engine.generate(generation)
        try:
            async for event in events:
                if isinstance(event, GenerationDone):
                    tail = stops.flush()
                    if tail:
                        yield TextDelta(tail)
                    reason: StopReason = "end_turn" if event.reason == "eog" else "max_tokens"
                    yield Finished(reason, None, _usage(event.prompt_tokens,
                                                        event.cached_tokens,
                                                        event.generated_tokens))
                    return
                generated += 1 if event.token >= 0 else 0
                safe, matched = stops.feed(event.text)
                if safe:
                    yield TextDelta(safe)
                if matched is not None:
                    yield Finished("stop_sequence", matched,
                                   _usage(len(prompt.tokens), 0, generated))
                    return
        finally:
            await events.aclose()

    async def complete(self, request: ChatRequest, prompt: Prompt | None = None) -> ChatResult:
        return await fold(self.stream(request, prompt))


async def fold(events: AsyncGenerator[ChatEvent, None]) -> ChatResult:
    """A whole reply from its events: the non-streaming form of the same generation."""
    parts: list[str] = []
    async with aclosing(events):
        async for event in events:
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Finished):
                return ChatResult("".join(parts), event.stop_reason, event.stop_sequence,
                                  event.usage)
    raise RuntimeError("the generation ended without a final event")


def _usage(prompt_tokens: int, cached_tokens: int, generated: int) -> Usage:
    return Usage(input_tokens=prompt_tokens - cached_tokens, output_tokens=max(generated, 1),
                 cached_tokens=cached_tokens)
