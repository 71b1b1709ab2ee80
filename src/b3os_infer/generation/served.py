"""The models the routes serve: the registry the app holds in its state."""

from __future__ import annotations

from starlette.requests import Request

from ..node.registry import ModelRegistry


def registry_of(request: Request) -> ModelRegistry:
    registry: ModelRegistry = request.app.state.registry
    return registry


__all__ = ["registry_of"]
