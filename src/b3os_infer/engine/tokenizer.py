"""What a node needs of a tokenizer that lives outside its engine (upstream models)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TokenizerInfo:
    chat_template: str | None
    bos_token: str
    eos_token: str
    vocab_size: int
    trained_window: int | None
    name: str | None = None   # the model's own name, where its files say it


class Tokenizer(Protocol):
    info: TokenizerInfo

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes: ...

    def detokenize(self, tokens: list[int]) -> str:
        """The text of ``tokens`` with special tokens written out (a text prompt)."""
        ...
