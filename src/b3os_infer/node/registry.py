"""The models this node serves, by id. A name is never mapped to another model.

Chat models and embedding models share one namespace of ids; each route asks for the
kind it serves, and a model of the other kind is a clear 400, not a 404.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Protocol, TypeVar

from ..engine.base import ReportsProblems
from ..errors import InvalidRequest, model_not_available
from .chat import ChatModel
from .embedding import EmbeddingModel

M = TypeVar("M")


class ModelRegistry:
    def __init__(self) -> None:
        self._models: dict[str, ChatModel] = {}
        self._embeddings: dict[str, EmbeddingModel] = {}

    def add(self, model: ChatModel) -> None:
        self._models[model.card.id] = model

    def add_embedding(self, model: EmbeddingModel) -> None:
        self._embeddings[model.card.id] = model

    def get(self, model_id: str) -> ChatModel:
        """A chat model (every route but ``/embeddings`` generates text)."""
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
        states = {m.card.id: _state(m.engine) for m in self._models.values()}
        states.update((m.card.id, _state(m.engine)) for m in self._embeddings.values())
        return states

    async def start(self) -> None:
        for model in self._models.values():
            await model.engine.start()
        for embedding in self._embeddings.values():
            await embedding.engine.start()

    async def close(self) -> None:
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
    if isinstance(engine, ReportsProblems) and (problem := engine.problem()):
        state["problem"] = problem
    return state
