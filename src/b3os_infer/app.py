"""The app factory: edge middleware around the node's routes. State lives on the app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from .anthropic.routes import routes as anthropic_routes
from .edge.auth import AuthMiddleware
from .edge.context import RequestContextMiddleware
from .edge.keys import KeyStore
from .errors import InferError, MethodNotAllowed, NotFound
from .http.formats import BASE, error_response
from .http.requests import request_id
from .node.registry import ModelRegistry
from .openai_api.routes import routes as openai_routes


async def healthz(request: Request) -> Response:
    registry: ModelRegistry = request.app.state.registry
    models = {m.card.id: {"healthy": m.engine.healthy(), **m.engine.load()}
              for m in registry.all()}
    ok = all(state["healthy"] for state in models.values())
    return JSONResponse({"status": "ok" if ok else "unhealthy", "models": models},
                        status_code=200 if ok else 503)


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


def create_app(registry: ModelRegistry, keys: KeyStore) -> ASGIApp:
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await registry.start()
        try:
            yield
        finally:
            await registry.close()

    routes = anthropic_routes(BASE) + openai_routes(BASE)
    routes.append(Route("/healthz", healthz, methods=["GET"]))
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                    lifespan=lifespan)
    app.state.registry = registry
    app.state.keys = keys
    return RequestContextMiddleware(AuthMiddleware(app, keys))
