"""The HTTP observer (pure ASGI): one ``Observation`` per request, made current for the
layers below; when the response starts, the phases it knows go out in ``server-timing``;
when it ends, the request is counted and its spans are made.

Inside ``RequestContextMiddleware``, which names the request and adds ``total`` after the
phases: ``server-timing: load;dur=..., queue;dur=..., prefill;dur=..., decode;dur=...``
(``load`` only when the request waited for its model to load) then
``server-timing: total;dur=...``. A phase is sent only once it is over: a non-streamed
reply has all three, a stream's headers leave before its first token (at most ``queue``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue
from starlette.datastructures import MutableHeaders
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .context import Observation, begin, end
from .metrics import Metrics
from .tracing import REQUEST_ID, Tracing

_CONVERTER = re.compile(r":\w+}")
log = logging.getLogger(__name__)


class RouteLabels:
    """A request's route as a bounded label: the template of the route that served it,
    else of the first of ``known`` that matches (an edge forwarding to its nodes), else
    ``other``."""

    def __init__(self, known: Sequence[BaseRoute] = ()) -> None:
        self.known = list(known)

    def __call__(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is None:
            route = next((r for r in self.known if r.matches(scope)[0] != Match.NONE), None)
        path = getattr(route, "path", None)
        return _CONVERTER.sub("}", path) if isinstance(path, str) else "other"


@dataclass(frozen=True)
class Observers:
    metrics: Metrics
    tracing: Tracing
    role: str                                  # "serve", "edge" or "node"
    # the API a path speaks ("anthropic", "openai"); None outside the API: not traced
    provider_of: Callable[[str], str | None]
    routes: RouteLabels


def server_timing(observation: Observation) -> str | None:
    phases = (("load", observation.load_ns()), ("queue", observation.queue_ns()),
              ("prefill", observation.prefill_ns()),
              ("decode", observation.decode_ns()))
    known = [f"{name};dur={ns / 1e6:.3f}" for name, ns in phases if ns is not None]
    return ", ".join(known) or None


class ObserveMiddleware:
    def __init__(self, app: ASGIApp, observers: Observers) -> None:
        self.app = app
        self.observers = observers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        observation = Observation(str(state.get("request_id") or ""), state=state,
                                  sink=self.observers.metrics)
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if (timing := server_timing(observation)) is not None:
                    MutableHeaders(scope=message).append("server-timing", timing)
            await send(message)

        token = begin(observation)
        name = f"{scope.get('method', '')} {scope['path']}"
        attributes: dict[str, AttributeValue] = {
            REQUEST_ID: observation.request_id, "b3os.role": self.observers.role,
            "http.request.method": scope.get("method", ""), "url.path": scope["path"]}
        api = self.observers.provider_of(scope["path"])   # None: not an API request
        try:
            with self.observers.tracing.server_span(name, scope["headers"], attributes,
                                                    traced=api is not None) as span:
                try:
                    await self.app(scope, receive, sending)
                except Exception:
                    status = status or 500
                    raise
                finally:
                    try:
                        self._done(scope, observation, status or 499, span, api)
                    except Exception:  # noqa: BLE001 - an observer never fails a request
                        log.exception("could not record request %s", observation.request_id)
        finally:
            end(token)

    def _done(self, scope: Scope, observation: Observation, status: int,
              span: Span | None, api: str | None) -> None:
        observers = self.observers
        route = observers.routes(scope)
        observers.metrics.request_done(observation, route, status, time.perf_counter_ns())
        if status in (401, 403) and observation.error_code is not None:
            observers.metrics.auth_failed(observation.error_code)
        if span is None:
            return
        span.update_name(f"{scope.get('method', '')} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            span.set_attribute("error.type", observation.error_code or str(status))
        observers.tracing.generation_spans(span, observation,
                                           genai_attributes(observation, api))


def genai_attributes(observation: Observation, provider: str | None
                     ) -> dict[str, AttributeValue]:
    """The OpenTelemetry GenAI semantic conventions for the request's generations."""
    usage = observation.usage
    generations = observation.generations
    if observation.finishes:
        prompt, cached = usage.prompt_tokens, usage.cached_tokens
        output = usage.output_tokens
    else:   # it broke off: what the engine had done
        prompt = max((g.prompt_tokens for g in generations), default=0)
        cached = max((g.cached_tokens for g in generations), default=0)
        output = sum(g.generated_tokens for g in generations)
    attributes: dict[str, AttributeValue] = {
        REQUEST_ID: observation.request_id,
        "gen_ai.operation.name": observation.operation or "chat",
        "gen_ai.request.model": observation.model or "",
        "gen_ai.request.max_tokens": max((g.max_tokens for g in generations), default=0),
        "gen_ai.response.finish_reasons": tuple(observation.finishes) or ("abort",),
        "gen_ai.usage.input_tokens": prompt,
        "gen_ai.usage.output_tokens": output,
        "gen_ai.usage.cache_read.input_tokens": cached,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
    }
    if provider is not None:
        attributes["gen_ai.provider.name"] = provider
    if observation.response_id is not None:
        attributes["gen_ai.response.id"] = observation.response_id
    return attributes
