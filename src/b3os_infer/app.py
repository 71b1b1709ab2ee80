"""The app factories: one process, a node, or an edge. State lives on the app.

- ``create_app``: edge middleware around the node's routes (``b3os-infer serve``).
- ``create_node_app``: the node's routes behind ``NodeGuard`` (``b3os-infer node``).
- ``create_edge_app``: edge middleware around the forwarder (``b3os-infer edge``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .anthropic.routes import routes as anthropic_routes
from .batches.apis import batch_routes, batch_service
from .batches.behind_fleet import batch_path, refuse_in_fleet
from .batches.service import BatchService
from .config import BatchSettings
from .console.serve import Console
from .edge.access.auth import AuthMiddleware
from .edge.access.keys import KeyStore
from .edge.admin.api import AdminApi
from .edge.fleet.callbacks import Tickets, callback_route
from .edge.fleet.forward import Forwarder
from .edge.fleet.node_guard import NodeGuard
from .edge.fleet.nodes import NodePool
from .edge.fleet.protocol import CALLBACK_PREFIX
from .edge.fleet.standard_api import StandardApi
from .edge.middleware import EdgeMiddleware
from .edge.request_stamps import RequestContextMiddleware
from .edge.scrape import ScrapeAccess, metrics_route
from .edge.shutdown_gate import ShutdownGate
from .edge.state import EdgeState
from .envelopes import error_response
from .errors import InferError, MethodNotAllowed, NotFound
from .http.endpoint import report
from .http.formats import BASE, api_for_path
from .http.requests import request_id
from .http.shutdown import Shutdown
from .node.prompt_prints import PromptPrints
from .node.registry import ModelRegistry
from .node.server_tools.tool_run import ServerTools
from .observe.http import ObserveMiddleware, Observers, RouteLabels
from .observe.metrics import Metrics, Watched
from .observe.tracing import Tracing
from .observe.vllm_names import vllm_gauges
from .openai_api.routes import routes as openai_routes
from .openai_api.tokenize import PATH as TOKENIZE_PATH
from .openai_api.tokenize import tokenize


async def healthz(request: Request) -> Response:
    registry: ModelRegistry = request.app.state.registry
    models = registry.health()
    ok = all(state["healthy"] for state in models.values())
    body: dict[str, object] = {"status": "ok" if ok else "unhealthy", "models": models,
                               "resident_bytes": resident_bytes()}
    if (edge := getattr(request.app.state, "edge", None)) is not None:
        body["queues"] = edge.queues.load()
    return JSONResponse(body, status_code=200 if ok else 503)


def resident_bytes() -> int | None:
    """This process's resident memory (Linux's /proc; None elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    path = request.url.path
    error: InferError
    if exc.status_code == 405:
        error = MethodNotAllowed(f"{request.method} is not allowed on {path}")
    else:
        error = NotFound(f"{request.method} {path} is not a route of this server",
                         code="route_not_found")
    return error_response(path, error, request_id(request))


async def infer_error(request: Request, exc: Exception) -> Response:
    """A route's failure (see ``http/endpoint.py``), in its API's envelope."""
    assert isinstance(exc, InferError)
    return error_response(request.url.path, report(exc, request_id(request)),
                          request_id(request))


def _provider(path: str) -> str | None:
    """The GenAI provider name of a path: the API it speaks."""
    return api_for_path(path) if path == BASE or path.startswith(BASE + "/") else None


def _observed(app: ASGIApp, metrics: Metrics, tracing: Tracing | None, role: str) -> ASGIApp:
    """Requests refused before routing (or forwarded by an edge) are labelled with the
    API route they match."""
    observers = Observers(metrics, tracing or Tracing.from_env(), role, _provider,
                          RouteLabels(anthropic_routes(BASE) + openai_routes(BASE)))
    return ObserveMiddleware(app, observers)


def _watch_models(metrics: Metrics, registry: ModelRegistry, vllm_names: bool = False) -> None:
    def engines() -> list[tuple[str, Watched]]:
        return [*((m.card.id, m.engine) for m in registry.all()),
                *((m.card.id, m.engine) for m in registry.embeddings())]

    metrics.serve_models(lambda: [model for model, _ in engines()])
    metrics.watch_engines(engines)
    if vllm_names:
        metrics.watch_gauges("vllm", lambda: vllm_gauges(engines()))


def _node_app(registry: ModelRegistry, edge: EdgeState | None,
              scrape: Route | None = None, batches: BatchService | None = None,
              server_tools: ServerTools | None = None,
              extra: tuple[Route, ...] = ()) -> Starlette:
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await registry.start()
        if batches is not None:
            batches.start()   # resumes the batches a stop left in progress
        try:
            yield
        finally:
            if batches is not None:
                await batches.close()
            await registry.close()
            if server_tools is not None:
                await server_tools.close()
            if edge is not None:
                await edge.limiter.close()
                edge.ledger.close()

    routes = anthropic_routes(BASE) + openai_routes(BASE)
    if batches is not None:
        routes += batch_routes(BASE)
    routes.append(Route("/healthz", healthz, methods=["GET"]))
    routes.extend(extra)
    if scrape is not None:
        routes.append(scrape)
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, InferError: infer_error})
    app.state.registry = registry
    app.state.prompt_prints = PromptPrints()
    app.state.batches = batches
    app.state.server_tools = server_tools
    if batches is not None:
        batches.bind(app)
    return app


def _edge_layers(app: ASGIApp, edge: EdgeState, observed: Callable[[ASGIApp], ASGIApp],
                 shutdown: Shutdown, open_paths: tuple[str, ...] = (),
                 registry: ModelRegistry | None = None) -> ASGIApp:
    inner = AdminApi(EdgeMiddleware(app, edge), edge, registry)
    authenticated = observed(Console(AuthMiddleware(inner, edge.gate, edge.ledger)))
    return RequestContextMiddleware(ShutdownGate(authenticated, shutdown, open_paths))


def create_app(registry: ModelRegistry, keys: KeyStore, edge: EdgeState | None = None,
               shutdown: Shutdown | None = None,
               batches: BatchSettings | BatchService | None = None, *,
               tracing: Tracing | None = None,
               server_tools: ServerTools | None = None) -> ASGIApp:
    """``batches``: the batch service (tests build their own), or its settings."""
    edge = edge or EdgeState.for_keys(keys)
    if not isinstance(batches, BatchService):
        batches = batch_service(keys.engine, edge, keys, registry, batches)
    _watch_models(edge.metrics, registry)
    edge.metrics.watch_queues(edge.queues.load)
    scrape = metrics_route(edge.metrics, ScrapeAccess(edge.gate, edge.metrics.config.token))
    app = _node_app(registry, edge, scrape, batches, server_tools)
    app.state.keys = keys
    app.state.edge = edge
    return _edge_layers(app, edge, lambda inner: _observed(inner, edge.metrics, tracing,
                                                             "serve"), shutdown or Shutdown(),
                        registry=registry)


def create_node_app(registry: ModelRegistry, secret: str, metrics: Metrics | None = None,
                    shutdown: Shutdown | None = None, *,
                    tracing: Tracing | None = None,
                    server_tools: ServerTools | None = None,
                    standard_api: bool = False) -> ASGIApp:
    """``standard_api``: the standard paths and vLLM's metric names as well, for a
    standard router in front (``edge/fleet/standard_api.py``)."""
    metrics = metrics or Metrics()
    _watch_models(metrics, registry, vllm_names=standard_api)
    scrape = metrics_route(metrics, ScrapeAccess(None, metrics.config.token, secret))
    extra = (Route(BASE + TOKENIZE_PATH, tokenize, methods=["POST"]),) if standard_api else ()
    app = _observed(_node_app(registry, None, scrape, server_tools=server_tools, extra=extra),
                    metrics, tracing, "node")
    gated = ShutdownGate(app, shutdown or Shutdown())
    guarded = NodeGuard(RequestContextMiddleware(gated), secret)
    return StandardApi(guarded, secret) if standard_api else guarded


def create_edge_app(edge: EdgeState, pool: NodePool, secret: str,
                    advertise_url: str, shutdown: Shutdown | None = None, *,
                    tracing: Tracing | None = None) -> ASGIApp:
    tickets = Tickets()
    metrics = edge.metrics
    metrics.serve_models(lambda: {m for node in pool.nodes for m in node.openai_models})
    metrics.watch_queues(edge.queues.load)
    metrics.watch_nodes(lambda: {node.url: node.up for node in pool.nodes})
    metrics.watch_node_caches(lambda: {node.url: node.cache for node in pool.nodes})
    forwarder = Forwarder(pool, tickets, secret, advertise_url, metrics, edge.balance)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=None)) as client:
            forwarder.client = client
            await pool.refresh(client)
            watcher = asyncio.create_task(pool.watch(client))
            try:
                yield
            finally:
                watcher.cancel()
                await edge.limiter.close()
                edge.ledger.close()

    async def edge_health(_: Request) -> Response:
        ok = any(node.up for node in pool.nodes)
        return JSONResponse({"status": "ok" if ok else "unhealthy",
                             "nodes": {n.url: n.status() for n in pool.nodes},
                             "queues": edge.queues.load()}, status_code=200 if ok else 503)

    routes = [Route("/healthz", edge_health, methods=["GET"]), callback_route(tickets, secret),
              metrics_route(metrics, ScrapeAccess(edge.gate, metrics.config.token))]
    inner = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                      lifespan=lifespan)

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and batch_path(path):
            await refuse_in_fleet(scope, receive, send)
        elif scope["type"] == "http" and (path == BASE or path.startswith(BASE + "/")):
            await forwarder(scope, receive, send)
        else:
            await inner(scope, receive, send)

    return _edge_layers(dispatch, edge, lambda inner: _observed(inner, metrics, tracing, "edge"),
                        shutdown or Shutdown(), (CALLBACK_PREFIX,))
