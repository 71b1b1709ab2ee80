"""One request as the observers see it: its phases, its model and how it ended.

The HTTP observer (``observe/http.py``) opens an ``Observation`` for each request and makes
it current in a context variable (the way OpenTelemetry carries its own context: tasks
started for the request, such as a stream's body or the choices of ``n > 1``, share it).
The layers below note what they learn without knowing who reads it: the admission its
wait, the node each generation's engine events and each reply's finish, a route its
response id, the envelope the error code. Outside a request nothing is current and every
note is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol

from ..core import Finished, NodeEvent, Usage
from ..engine.base import NOT_A_TOKEN, Admitted, EngineEvent, GenerationRequest, TokenEvent

P = ParamSpec("P")
log = logging.getLogger(__name__)


@dataclass
class Generation:
    """One engine generation of a request (a request with ``n`` choices has ``n``).

    Moments are ``time.perf_counter_ns()``; ``None`` until they happen."""

    model: str
    max_tokens: int
    started: int
    admitted: int | None = None
    first_token: int | None = None
    last_token: int | None = None
    ended: int | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    # speculative decoding: tokens drafted and, of those, the ones the model agreed with
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    finish: str | None = None    # the engine's: "eog" or "length"; None if cut off

    def see(self, event: EngineEvent, now: int) -> None:
        if isinstance(event, TokenEvent):   # the common case first
            if self.first_token is None:
                self.first_token = now
            self.last_token = now
            self.generated_tokens += event.token != NOT_A_TOKEN
        elif isinstance(event, Admitted):
            self.admitted = now
            self.prompt_tokens, self.cached_tokens = event.prompt_tokens, event.cached_tokens
        else:
            self.finish = event.reason
            self.prompt_tokens, self.cached_tokens = event.prompt_tokens, event.cached_tokens
            self.generated_tokens = event.generated_tokens
            self.drafted_tokens, self.accepted_tokens = (event.drafted_tokens,
                                                         event.accepted_tokens)


class GenerationSink(Protocol):
    def generation_ended(self, observation: Observation, generation: Generation) -> None: ...


@dataclass
class Observation:
    request_id: str
    began: int = field(default_factory=time.perf_counter_ns)
    wall: int = field(default_factory=time.time_ns)
    state: dict[str, Any] = field(default_factory=dict)   # the request's ASGI scope state
    sink: GenerationSink | None = None
    model: str | None = None
    operation: str | None = None
    response_id: str | None = None
    error_code: str | None = None
    admission: tuple[int, int] | None = None     # (began, ended)
    loading: tuple[int, int] | None = None       # waiting for its model to load
    generations: list[Generation] = field(default_factory=list)
    finishes: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def wall_ns(self, moment: int) -> int:
        """A ``perf_counter_ns`` moment of this request on the wall clock (for spans)."""
        return self.wall + (moment - self.began)

    @property
    def key_id(self) -> str | None:
        key = getattr(self.state.get("api_key"), "id", None)
        return key if isinstance(key, str) else None

    # ---- the request's phases, over all its generations (ns, None when unknown) ----------

    def load_ns(self) -> int | None:
        return self.loading[1] - self.loading[0] if self.loading else None

    def queue_ns(self) -> int | None:
        """Waiting for admission and for a slot, not for the model's load."""
        admitted = [g.admitted - g.started for g in self.generations if g.admitted]
        if not admitted:
            return None
        waited = self.admission[1] - self.admission[0] if self.admission else 0
        return max(waited + min(admitted) - (self.load_ns() or 0), 0)

    def prefill_ns(self) -> int | None:
        starts = [g.admitted for g in self.generations if g.admitted]
        firsts = [g.first_token for g in self.generations if g.first_token]
        return min(firsts) - min(starts) if starts and firsts else None

    def decode_ns(self) -> int | None:
        firsts = [g.first_token for g in self.generations if g.first_token]
        ends = [g.ended for g in self.generations if g.ended]
        if not firsts or not ends or len(ends) < len(self.generations):
            return None
        return max(ends) - min(firsts)

    def finish_reason(self) -> str:
        """The reply's finish (the last choice's, for several); ``abort`` for a
        generation that never finished, ``none`` for a request that generated nothing."""
        if self.finishes:
            return self.finishes[-1]
        return "abort" if self.generations else "none"


_current: ContextVar[Observation | None] = ContextVar("b3os_observation", default=None)


def current() -> Observation | None:
    return _current.get()


def begin(observation: Observation) -> Token[Observation | None]:
    return _current.set(observation)


def end(token: Token[Observation | None]) -> None:
    _current.reset(token)


# ---- notes from the layers below -----------------------------------------------------


def note_model(model_id: str | None) -> None:
    if model_id is not None and (observation := _current.get()) is not None:
        observation.model = observation.model or model_id


def note_admission(model_id: str, began: int, ended: int) -> None:
    if (observation := _current.get()) is not None:
        observation.model = model_id
        observation.admission = (began, ended)


def note_load(began: int, ended: int) -> None:
    """The request waited from ``began`` to ``ended`` for its model to load (the first
    wait of the request counts; a load it found done is no wait)."""
    if (observation := _current.get()) is not None and observation.loading is None \
            and ended - began > 0:
        observation.loading = (began, ended)


def note_response_id(response_id: str) -> None:
    if (observation := _current.get()) is not None:
        observation.response_id = response_id


def note_error(code: str) -> None:
    if (observation := _current.get()) is not None:
        observation.error_code = code


def watch_generation(model_id: str, request: GenerationRequest,
                     events: AsyncGenerator[EngineEvent, None]
                     ) -> AsyncGenerator[EngineEvent, None]:
    """The engine's events, passed on unchanged; their moments noted for the request."""
    observation = _current.get()
    if observation is None:
        return events
    generation = Generation(model_id, request.max_tokens, time.perf_counter_ns())
    observation.model = model_id
    observation.generations.append(generation)
    return _watched(observation, generation, events)


async def _watched(observation: Observation, generation: Generation,
                   events: AsyncGenerator[EngineEvent, None]
                   ) -> AsyncGenerator[EngineEvent, None]:
    try:
        async for event in events:
            generation.see(event, time.perf_counter_ns())
            yield event
    finally:
        await events.aclose()
        generation.ended = time.perf_counter_ns()
        if observation.sink is not None:
            try:
                observation.sink.generation_ended(observation, generation)
            except Exception:  # noqa: BLE001 - an observer never fails a generation
                log.exception("could not record a generation of %s", observation.request_id)


def observed_reply(operation: str) -> Callable[[Callable[P, AsyncGenerator[NodeEvent, None]]],
                                               Callable[P, AsyncGenerator[NodeEvent, None]]]:
    """Decorates a node's reply stream: its operation (``chat``, ``text_completion``) and
    each ``Finished`` (reason and usage) are noted for the request."""

    def decorate(reply: Callable[P, AsyncGenerator[NodeEvent, None]]
                 ) -> Callable[P, AsyncGenerator[NodeEvent, None]]:
        def observed(*args: P.args, **kwargs: P.kwargs) -> AsyncGenerator[NodeEvent, None]:
            events = reply(*args, **kwargs)
            observation = _current.get()
            if observation is None:
                return events
            observation.operation = operation
            return _noting(observation, events)

        observed.__doc__ = reply.__doc__
        return observed

    return decorate


async def _noting(observation: Observation, events: AsyncGenerator[NodeEvent, None]
                  ) -> AsyncGenerator[NodeEvent, None]:
    try:
        async for event in events:
            if isinstance(event, Finished):
                observation.finishes.append(event.stop_reason)
                usage = observation.usage
                usage.input_tokens = event.usage.input_tokens   # the prompt, counted once
                usage.cached_tokens = event.usage.cached_tokens
                usage.output_tokens += event.usage.output_tokens
                usage.reasoning_tokens += event.usage.reasoning_tokens
            yield event
    finally:
        await events.aclose()
