"""The APIs batches are served on: the service with what ends a batch of each API (the
OpenAI one writes its output and error files), and their routes."""

from __future__ import annotations

from sqlalchemy import Engine
from starlette.routing import Route

from ..config import BatchSettings
from ..edge.access.keys import KeyStore
from ..edge.state import EdgeState
from ..node.registry import ModelRegistry
from .anthropic.routes import routes as anthropic_routes
from .openai_api.output_files import finish_openai
from .openai_api.routes import routes as openai_routes
from .service import BatchService
from .store import Finisher

FINISHERS: dict[str, Finisher] = {"openai": finish_openai}


def batch_service(database: Engine, edge: EdgeState, keys: KeyStore, registry: ModelRegistry,
                  settings: BatchSettings | None = None) -> BatchService:
    return BatchService(database, edge, keys, registry, settings, FINISHERS)


def batch_routes(prefix: str) -> list[Route]:
    return anthropic_routes(prefix) + openai_routes(prefix)
