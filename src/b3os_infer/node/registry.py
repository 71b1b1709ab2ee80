"""The models this node serves, by id. A name is never mapped to another model."""

from __future__ import annotations

from ..errors import model_not_available
from .chat import ChatModel


class ModelRegistry:
    def __init__(self) -> None:
        self._models: dict[str, ChatModel] = {}

    def add(self, model: ChatModel) -> None:
        self._models[model.card.id] = model

    def get(self, model_id: str) -> ChatModel:
        model = self._models.get(model_id)
        if model is None:
            raise model_not_available(model_id)
        return model

    def all(self) -> list[ChatModel]:
        return list(self._models.values())

    async def start(self) -> None:
        for model in self._models.values():
            await model.engine.start()

    async def close(self) -> None:
        for model in self._models.values():
            await model.engine.close()
