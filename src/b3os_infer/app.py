"""The app factories: one process, a node, or an edge. State lives on the app.

- ``create_app``: edge middleware around the node's routes (``b3os-infer serve``).
- ``create_node_app``: the node's routes behind ``NodeGuard`` (``b3os-infer node``).
- ``create_edge_app``: edge middleware around the forwarder (``b3os-infer edge``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .anthropic.routes import routes as anthropic_routes
from .batches.service import BatchService
from .config import BatchSettings
from .edge.auth import AuthMiddleware
from .edge.callbacks import Tickets, callback_route
from .edge.context import RequestContextMiddleware
from .edge.forward import Forwarder
from .edge.keys import KeyStore
from .edge.middleware import EdgeMiddleware
from .edge.node_guard import NodeGuard
from .edge.nodes import NodePool
from .edge.state import EdgeState
from .envelopes import error_response
from .errors import InferError, MethodNotAllowed, NotFound
from .http.formats import BASE
from .http.requests import request_id
from .node.registry import ModelRegistry
from .openai_api.routes import routes as openai_routes


async def healthz(request: Request) -> Response:
    registry: ModelRegistry = request.app.state.registry
    models = {m.card.id: {"healthy": m.engine.healthy(), **m.engine.load()}
              for m in registry.all()}
    ok = all(state["healthy"] for state in models.values())
    body: dict[str, object] = {"status": "ok" if ok else "unhealthy", "models": models}
    if (edge := getattr(request.app.state, "edge", None)) is not None:
        body["queues"] = edge.queues.load()
    return JSONResponse(body, status_code=200 if ok else 503)


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
    return error_response(request.url.path, exc, request_id(request))


def _node_app(registry: ModelRegistry, edge: EdgeState | None,
              batches: BatchService | None = None) -> Starlette:
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
            if edge is not None:
                await edge.limiter.close()
                edge.ledger.close()

    routes = anthropic_routes(BASE) + openai_routes(BASE)
    if batches is not None:
        routes += batches.routes(BASE)
    routes.append(Route("/healthz", healthz, methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, InferError: infer_error})
    app.state.registry = registry
    app.state.batches = batches
    if batches is not None:
        batches.bind(app)
    return app


def _edge_layers(app: ASGIApp, edge: EdgeState) -> ASGIApp:
    return RequestContextMiddleware(AuthMiddleware(EdgeMiddleware(app, edge), edge.keys,
                                                   edge.ledger))


def create_app(registry: ModelRegistry, keys: KeyStore, edge: EdgeState | None = None,
               batches: BatchSettings | BatchService | None = None) -> ASGIApp:
    """``batches``: the batch service (tests build their own), or its settings."""
    edge = edge or EdgeState.for_keys(keys)
    if not isinstance(batches, BatchService):
        batches = BatchService(keys.engine, edge, keys, registry, batches)
    app = _node_app(registry, edge, batches)
    app.state.keys = keys
    app.state.edge = edge
    return _edge_layers(app, edge)


def create_node_app(registry: ModelRegistry, secret: str) -> ASGIApp:
    return NodeGuard(RequestContextMiddleware(_node_app(registry, None)), secret)


def create_edge_app(edge: EdgeState, pool: NodePool, secret: str,
                    advertise_url: str) -> ASGIApp:
    tickets = Tickets()
    forwarder = Forwarder(pool, tickets, secret, advertise_url)

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

    routes = [Route("/healthz", edge_health, methods=["GET"]), callback_route(tickets, secret)]
    inner = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                      lifespan=lifespan)

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == BASE or path.startswith(BASE + "/")):
            await forwarder(scope, receive, send)
        else:
            await inner(scope, receive, send)

    return _edge_layers(dispatch, edge)
