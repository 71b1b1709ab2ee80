"""Which models the request's credential may use, as the edge found it.

The edge's authentication writes what the presented key allows into the ASGI scope
(``grant``); the wire packages read it (``allowed_models``) to filter their listings,
without knowing keys or the edge. Without an edge (a node behind its guard) nothing is
written and every model is listed.
"""

from __future__ import annotations

from typing import Protocol

from starlette.types import Scope

ALLOWANCE_KEY = "b3os.allowed_models"


class ModelAllowance(Protocol):
    def allows_model(self, model_id: str) -> bool: ...

    def allows(self, scope: str) -> bool: ...


def grant(scope: Scope, allowance: ModelAllowance) -> None:
    scope.setdefault("state", {})[ALLOWANCE_KEY] = allowance


def allowed_models(scope: Scope) -> ModelAllowance | None:
    """What the request's key allows; None: no key was checked here (all models)."""
    allowance: ModelAllowance | None = scope.get("state", {}).get(ALLOWANCE_KEY)
    return allowance


def allows_scope(scope: Scope, name: str) -> bool:
    """Whether the request's key has the scope ``name``; True where no key was checked."""
    allowance = allowed_models(scope)
    return allowance is None or allowance.allows(name)
