"""The models this node serves, by id. A name is never mapped to another model.

Chat models and embedding models share one namespace of ids; each route asks for the
kind it serves, and a model of the other kind is a clear 400, not a 404.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Container, Mapping
from typing import Protocol, TypeVar

from ..engine.base import ReportsProblems
from ..engine.memory_plan import available_memory
from ..errors import InvalidRequest, model_not_available
from .chat_model import ChatModel
from .embedding import EmbeddingModel
from .lifecycle import (
    Bounds,
    CannotLoad,
    Keeper,
    OnDemandEngine,
    Resident,
    residency_report,
)

log = logging.getLogger(__name__)

M = TypeVar("M")


class ModelRegistry:
    def __init__(self, bounds: Bounds | None = None) -> None:
        self._models: dict[str, ChatModel] = {}
        self._embeddings: dict[str, EmbeddingModel] = {}
        self._preload: list[str] = []
        # configured models whose file llama.cpp could not read: why, for each request
        self._unreadable: dict[str, str] = {}
        # the node's loaded models within their bounds (GGUF models load on demand)
        self.keeper = Keeper(bounds or Bounds(), memory=available_memory)

    def add(self, model: ChatModel, *, preload: bool = False) -> None:
        """``preload``: a model that loads on demand is loaded at start as well."""
        self._models[model.card.id] = model
        if preload:
            self._preload.append(model.card.id)

    def add_embedding(self, model: EmbeddingModel) -> None:
        self._embeddings[model.card.id] = model

    def add_unreadable(self, model_id: str, why: str) -> None:
        """A configured model whose file cannot be read: its requests answer 503
        ``model_load_failed`` and ``/healthz`` says why; the other models serve."""
        log.error("%s cannot be served: %s", model_id, why)
        self._unreadable[model_id] = why

    def get(self, model_id: str) -> ChatModel:
        """A chat model (every route but ``/embeddings`` generates text)."""
        if model_id in self._unreadable:
            raise CannotLoad(f"{model_id} could not be loaded; the server log says why",
                             code="model_load_failed", detail=self._unreadable[model_id])
        return _served(self._models, model_id, self._embeddings,
                       "is an embedding model: it serves POST /v1/infer/embeddings only")

    def get_embedding(self, model_id: str) -> EmbeddingModel:
        return _served(self._embeddings, model_id, self._models,
                       "is a chat model; embeddings need a model listed with b3os.kind "
                       "\"embedding\"")

    def all(self) -> list[ChatModel]:
        """The chat models."""
        return list(self._models.values())

    def embeddings(self) -> list[EmbeddingModel]:
        return list(self._embeddings.values())

    def health(self) -> dict[str, dict[str, bool | int | str]]:
        """Each model's engine: healthy or not, its running and waiting work, and why it
        cannot serve the model as configured when it says so (``problem``)."""
        now = time.monotonic()
        engines: list[tuple[str, _Checked]] = [
            *((m.card.id, m.engine) for m in self._models.values()),
            *((m.card.id, m.engine) for m in self._embeddings.values())]
        states = {model_id: {**_state(engine), **residency_report(engine, now)}
                  for model_id, engine in engines}
        states.update((model_id, {"healthy": False, "active": 0, "waiting": 0,
                                  "problem": f"could not be read: {why}", "state": "unloaded"})
                      for model_id, why in self._unreadable.items())
        return states

    def on_demand(self, model_id: str) -> OnDemandEngine:
        """The lifecycle of a chat model that loads on demand; a 400 for one that does not
        (scripted and upstream models are always loaded)."""
        lifecycle = self._lifecycle(self.get(model_id).card.id)
        if lifecycle is None:
            raise InvalidRequest(f"{model_id} is always loaded: only models on the embedded "
                                 "engine load and unload", param="model", code="not_on_demand")
        return lifecycle

    # ---- residency, for the admin API -------------------------------------------------

    def residents(self) -> list[Resident]:
        now = time.monotonic()
        return [self._resident(m.card.id, now) for m in self._models.values()]

    def resident(self, model_id: str) -> Resident:
        return self._resident(self.get(model_id).card.id, time.monotonic())

    def _resident(self, model_id: str, now: float) -> Resident:
        lifecycle = self._lifecycle(model_id)
        if lifecycle is None:
            return Resident(model_id, "loaded", on_demand=False,
                            problem=_problem(self._models[model_id].engine))
        return lifecycle.resident(now)

    async def load_now(self, model_id: str) -> Resident:
        await self.on_demand(model_id).ensure_loaded()
        return self.resident(model_id)

    async def unload_now(self, model_id: str) -> Resident:
        await self.on_demand(model_id).unload_when_idle()
        return self.resident(model_id)

    async def pin(self, model_id: str, pinned: bool) -> Resident:
        """Pinned: loaded now and never unloaded by keep_alive or to make room."""
        lifecycle = self.on_demand(model_id)
        lifecycle.pinned = pinned
        if pinned:
            await lifecycle.ensure_loaded()
        return self.resident(model_id)

    def _lifecycle(self, model_id: str) -> OnDemandEngine | None:
        model = self._models.get(model_id)
        engine = model.engine if model is not None else None
        return engine if isinstance(engine, OnDemandEngine) else None

    async def start(self) -> None:
        for model in self._models.values():
            await model.engine.start()
        for embedding in self._embeddings.values():
            await embedding.engine.start()
        self.keeper.start()
        for model_id in self._preload:
            await self._load_at_start(model_id)

    async def _load_at_start(self, model_id: str) -> None:
        lifecycle = self._lifecycle(model_id)
        if lifecycle is None:
            return
        try:
            await lifecycle.ensure_loaded()
        except CannotLoad as exc:   # the other models go on serving
            log.error("%s was not loaded at start: %s", model_id, exc.message)

    async def close(self) -> None:
        await self.keeper.close()
        for model in self._models.values():
            await model.engine.close()
        for embedding in self._embeddings.values():
            await embedding.engine.close()


def _served(models: Mapping[str, M], model_id: str, other_kind: Container[str],
            what_it_is: str) -> M:
    """``model_id`` of this kind; a model of the other kind is a 400 that says what it is,
    any other name a 404."""
    model = models.get(model_id)
    if model is not None:
        return model
    if model_id in other_kind:
        raise InvalidRequest(f"{model_id} {what_it_is}", param="model",
                             code="wrong_model_kind")
    raise model_not_available(model_id)


class _Checked(Protocol):
    def healthy(self) -> bool: ...

    def load(self) -> dict[str, int]: ...


def _state(engine: _Checked) -> dict[str, bool | int | str]:
    state: dict[str, bool | int | str] = {"healthy": engine.healthy(), **engine.load()}
    if problem := _problem(engine):
        state["problem"] = problem
    return state


def _problem(engine: object) -> str | None:
    return engine.problem() if isinstance(engine, ReportsProblems) else None
