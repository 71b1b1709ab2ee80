"""OpenTelemetry traces: a server span per request, and after a generation its GenAI span
with ``queue``, ``prefill`` and ``decode`` under it.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set: then spans
go to that collector over OTLP/HTTP. Off, no span is made and the SDK is not imported.
The provider belongs to the app (never OpenTelemetry's global one), so tests hand each
app one with an in-memory exporter. A request's trace context comes in as a W3C
``traceparent`` header and leaves the same way (an edge's forward to its node).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from .context import Generation, Observation

REQUEST_ID = "b3os.request.id"
TRACE_HEADERS = ("traceparent", "tracestate")
_PROPAGATOR = TraceContextTextMapPropagator()
_ENDPOINT_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def otlp_provider() -> TracerProvider:
    """A provider exporting in batches over OTLP/HTTP, configured by the OTEL_* variables
    (endpoint, headers, ``OTEL_SERVICE_NAME``; default service name ``b3os-infer``)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or "b3os-infer"
    provider = SdkProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class Tracing:
    def __init__(self, provider: TracerProvider | None = None) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("b3os_infer") if provider is not None else None

    @classmethod
    def from_env(cls) -> Tracing:
        if not any(os.environ.get(name) for name in _ENDPOINT_ENV):
            return cls(None)
        return cls(otlp_provider())

    @property
    def on(self) -> bool:
        return self.tracer is not None

    @contextmanager
    def server_span(self, name: str, headers: Sequence[tuple[bytes, bytes]],
                    attributes: dict[str, AttributeValue], *, traced: bool = True
                    ) -> Iterator[Span | None]:
        """The request's span, continuing a trace its ``traceparent`` names; current
        while the request runs, so that a forward carries it on. None when tracing is
        off or the request is not ``traced``."""
        if self.tracer is None or not traced:
            yield None
            return
        carrier = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers
                   if k.decode("latin-1").lower() in TRACE_HEADERS}
        parent = _PROPAGATOR.extract(carrier)
        span = self.tracer.start_span(name, context=parent, kind=SpanKind.SERVER,
                                      attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            yield span
        finally:
            otel_context.detach(token)
            span.end()

    def generation_spans(self, parent: Span, observation: Observation,
                         attributes: dict[str, AttributeValue]) -> None:
        """The GenAI span of the request's generations and their phases, from the moments
        the observation noted."""
        if self.tracer is None or not observation.generations:
            return
        first, last = observation.generations[0], observation.generations[-1]
        name = f"{observation.operation or 'chat'} {observation.model or ''}".strip()
        began = observation.admission[0] if observation.admission else first.started
        span = self.tracer.start_span(name, context=trace.set_span_in_context(parent),
                                      kind=SpanKind.INTERNAL, attributes=attributes,
                                      start_time=observation.wall_ns(began))
        for generation in observation.generations:
            self._phases(span, observation, generation)
        span.end(end_time=observation.wall_ns(last.ended or last.started))

    def _phases(self, parent: Span, observation: Observation, generation: Generation) -> None:
        assert self.tracer is not None
        queued_from = observation.admission[0] if observation.admission else generation.started
        ended = generation.ended or generation.started
        phases = (("queue", queued_from, generation.admitted),
                  ("prefill", generation.admitted, generation.first_token),
                  ("decode", generation.first_token, ended))
        context = trace.set_span_in_context(parent)
        for name, start, end in phases:
            if start is None or end is None:
                continue
            span = self.tracer.start_span(name, context=context, kind=SpanKind.INTERNAL,
                                          attributes={REQUEST_ID: observation.request_id},
                                          start_time=observation.wall_ns(start))
            span.end(end_time=observation.wall_ns(end))


def outgoing_trace_headers() -> list[tuple[str, str]]:
    """The current span's context as W3C headers; none when no span is recording."""
    if not trace.get_current_span().get_span_context().is_valid:
        return []
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return list(carrier.items())
