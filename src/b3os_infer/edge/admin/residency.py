"""The admin API's model routes: which models are loaded, and loading, unloading and
pinning them by hand (``serve`` only: in a fleet each node keeps its own).

- ``GET  /admin/models``: every chat model's residency;
- ``POST /admin/models/{id}/load``: load it now (answers once it is loaded);
- ``POST /admin/models/{id}/unload``: unload it now (409 while requests run on it);
- ``POST /admin/models/{id}/pin``, ``/unpin``: keep it loaded whatever its keep_alive
  and the node's bounds say (pinning loads it), or let it go again.
"""

from __future__ import annotations

from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...errors import NotFound
from ...http.endpoint import endpoint
from ...node.lifecycle import Resident
from ...node.registry import ModelRegistry
from .wire import ModelResidencyList, ModelResidencyObject


def _registry(request: Request) -> ModelRegistry:
    registry: ModelRegistry | None = getattr(request.app.state, "registry", None)
    if registry is None:
        raise NotFound("this server loads no models itself: each node of a fleet loads and "
                       "unloads its own", code="route_not_found")
    return registry


def _json(resident: Resident) -> Response:
    return Response(ModelResidencyObject(**asdict(resident)).to_json(),
                    media_type="application/json")


@endpoint
async def list_models(request: Request) -> Response:
    residents = _registry(request).residents()
    body = ModelResidencyList(data=[ModelResidencyObject(**asdict(r)) for r in residents])
    return Response(body.to_json(), media_type="application/json")


@endpoint
async def load_model(request: Request) -> Response:
    return _json(await _registry(request).load_now(request.path_params["model_id"]))


@endpoint
async def unload_model(request: Request) -> Response:
    return _json(await _registry(request).unload_now(request.path_params["model_id"]))


@endpoint
async def pin_model(request: Request) -> Response:
    return _json(await _registry(request).pin(request.path_params["model_id"], True))


@endpoint
async def unpin_model(request: Request) -> Response:
    return _json(await _registry(request).pin(request.path_params["model_id"], False))


def model_routes(admin: str) -> list[Route]:
    one = admin + "/models/{model_id:path}"
    return [
        Route(admin + "/models", list_models, methods=["GET"]),
        Route(one + "/load", load_model, methods=["POST"]),
        Route(one + "/unload", unload_model, methods=["POST"]),
        Route(one + "/pin", pin_model, methods=["POST"]),
        Route(one + "/unpin", unpin_model, methods=["POST"]),
    ]
