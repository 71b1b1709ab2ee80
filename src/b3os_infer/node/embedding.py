"""An embedding model as the node serves it: its card, its engine, its input prompts.

The routes hand it texts or token lists; it applies the input type's prefix, counts and
truncates tokens, and has the engine compute the vectors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..engine.embedding.sentence import SentenceEmbedder
from ..errors import InvalidRequest

InputType = Literal["query", "document"]


@dataclass(frozen=True)
class EmbeddingCard:
    id: str
    display_name: str
    dimensions: int
    max_input_tokens: int
    kind: str = "embedding"
    created: int = field(default_factory=lambda: int(time.time()))
    owned_by: str = "b3os"


@dataclass(frozen=True)
class EmbeddingInput:
    tokens: list[int]
    truncated: bool


class EmbeddingModel:
    def __init__(self, card: EmbeddingCard, engine: SentenceEmbedder,
                 prefixes: dict[InputType, str] | None = None) -> None:
        self.card = card
        self.engine = engine
        self.prefixes: dict[InputType, str] = prefixes or {}

    def text_input(self, text: str, input_type: InputType | None, *, truncate: bool,
                   where: str) -> EmbeddingInput:
        """A text as the model's tokens: its input type's prefix (if the model has one)
        before it, cut to the model's limit when ``truncate``, else refused if longer."""
        if not text:
            raise InvalidRequest("an input must not be an empty string", param=where)
        prefix = self.prefixes.get(input_type, "") if input_type else ""
        return self._fit(self.engine.tokenize(prefix + text), truncate, where)

    def token_input(self, tokens: list[int], input_type: InputType | None, *, truncate: bool,
                    where: str) -> EmbeddingInput:
        """Token ids of the model's vocabulary, without its special tokens; the input
        type's prefix, if the model has one, goes before them as tokens."""
        vocab = self.engine.info.vocab_size
        if any(t >= vocab for t in tokens):
            raise InvalidRequest(f"token ids must be below {vocab}, this model's vocabulary "
                                 "size", param=where)
        prefix = self.prefixes.get(input_type, "") if input_type else ""
        return self._fit((self.engine.tokenize(prefix) if prefix else []) + tokens,
                         truncate, where)

    def _fit(self, tokens: list[int], truncate: bool, where: str) -> EmbeddingInput:
        limit = self.card.max_input_tokens
        if len(tokens) <= limit:
            return EmbeddingInput(tokens, truncated=False)
        if not truncate:
            raise InvalidRequest(f"this input has {len(tokens)} tokens; {self.card.id} takes "
                                 f"at most {limit} (send truncation: true to cut it)",
                                 param=where)
        return EmbeddingInput(tokens[:limit], truncated=True)

    def counted(self, inputs: list[EmbeddingInput]) -> int:
        """Tokens the model computes: each input with the two special tokens around it."""
        return sum(len(i.tokens) + 2 for i in inputs)

    async def embed(self, inputs: list[EmbeddingInput]) -> np.ndarray:
        return await self.engine.embed([i.tokens for i in inputs])
