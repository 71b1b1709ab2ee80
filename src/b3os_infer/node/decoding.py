"""The node's one token loop: the engine's tokens become reply events.

Chat replies and raw continuations both come through here; they differ only in how their
text is read (``Reading``: the chat reply parser, or ``PlainText``). The loop owns the
counting: ``Started`` once the prompt is admitted, ``Counted`` after every token the
engine counted (what the reply has used if it is cut short now) and ``Finished`` with the
whole usage.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Protocol, assert_never

from ..core import (
    ChatEvent,
    Counted,
    Finished,
    NodeEvent,
    Started,
    StopReason,
    TextDelta,
    TokenLogprob,
    Usage,
)
from ..engine.base import (
    NOT_A_TOKEN,
    Admitted,
    Engine,
    GenerationDone,
    GenerationRequest,
    TokenEvent,
)
from ..observe.context import watch_generation
from ..stops import StopMatcher


class Reading(Protocol):
    """How a reply's text is read as it comes."""

    @property
    def in_text(self) -> bool: ...

    @property
    def in_reasoning(self) -> bool: ...

    @property
    def calls(self) -> int: ...

    def feed(self, text: str) -> list[ChatEvent]: ...

    def finish(self) -> list[ChatEvent]: ...


class PlainText:
    """A raw continuation: all of it is text; no reasoning, no calls."""

    in_text = True
    in_reasoning = False
    calls = 0

    def feed(self, text: str) -> list[ChatEvent]:
        return [TextDelta(text)] if text else []

    def finish(self) -> list[ChatEvent]:
        return []


def prompt_usage(prompt_tokens: int, cached: int, generated: int, thought: int = 0) -> Usage:
    """The prompt in its two parts (``Usage``): processed, and read from the cache."""
    return Usage(input_tokens=prompt_tokens - cached, output_tokens=generated,
                 cached_tokens=cached, reasoning_tokens=min(thought, generated))


Scorer = Callable[[TokenEvent], TokenLogprob | None]


@dataclass
class TokenLoop:
    """One generation read into events. ``asked``: the cap the caller set, so that a reply
    cut earlier, where the window was full, stops with ``window`` instead of ``length``;
    ``score``: the log-probabilities of a token, when they were asked for."""

    model_id: str
    generation: GenerationRequest
    asked: int
    reading: Reading
    stops: StopMatcher
    score: Scorer | None = None
    cached: int = 0
    generated: int = 0
    thought: int = 0

    async def events(self, engine: Engine) -> AsyncGenerator[NodeEvent, None]:
        generated = engine.generate(self.generation)
        async with aclosing(watch_generation(self.model_id, self.generation,
                                             generated)) as events:
            async for event in events:
                match event:
                    case Admitted():
                        self.cached = event.cached_tokens
                        yield Started(self._usage())
                        continue
                    case GenerationDone():
                        outs = self._done(event)
                    case TokenEvent():
                        outs = self._token(event)
                    case _:
                        assert_never(event)
                for out in outs:
                    yield out
                if outs and isinstance(outs[-1], Finished):
                    return

    def _usage(self, generated: int | None = None) -> Usage:
        return prompt_usage(len(self.generation.prompt), self.cached,
                            self.generated if generated is None else generated, self.thought)

    def _token(self, event: TokenEvent) -> list[NodeEvent]:
        counted = 0 if event.token == NOT_A_TOKEN else 1
        self.generated += counted
        self.thought += counted if self.reading.in_reasoning else 0
        out: list[NodeEvent] = [Counted(self._usage())] if counted else []
        was_text = self.reading.in_text
        replies = self._stopped(self.reading.feed(event.text))
        scored = self.score(event) if self.score is not None else None
        if scored is not None and was_text and self.reading.in_text:
            out.append(scored)
        return out + replies

    def _done(self, event: GenerationDone) -> list[NodeEvent]:
        self.cached = event.cached_tokens   # an upstream engine tells it only now
        out = self._stopped(self.reading.finish())
        if out and isinstance(out[-1], Finished):
            return out
        tail = self.stops.flush()
        if tail:
            out.append(TextDelta(tail))
        usage = replace(self._usage(event.generated_tokens),
                        drafted_tokens=event.drafted_tokens,
                        accepted_tokens=event.accepted_tokens)
        out.append(Finished(self._reason(event), None, usage))
        return out

    def _reason(self, done: GenerationDone) -> StopReason:
        """A cut reply stopped at the caller's cap, or earlier, where the window was full."""
        if done.reason == "length":
            return "length" if done.generated_tokens >= self.asked else "window"
        return "tool_calls" if self.reading.calls else "end"

    def _stopped(self, events: list[ChatEvent]) -> list[NodeEvent]:
        """Text through the stop matcher; a match ends the list with ``Finished`` (at least
        one output token: an upstream engine counts its tokens only at the end)."""
        out: list[NodeEvent] = []
        for event in events:
            if not isinstance(event, TextDelta):
                out.append(event)
                continue
            safe, matched = self.stops.feed(event.text)
            if safe:
                out.append(TextDelta(safe))
            if matched is not None:
                usage = self._usage()
                out.append(Finished("stop_string", matched,
                                    replace(usage, output_tokens=max(usage.output_tokens, 1))))
                return out
        return out


__all__ = ["PlainText", "Reading", "TokenLoop", "prompt_usage"]
