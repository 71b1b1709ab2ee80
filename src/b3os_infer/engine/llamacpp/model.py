"""The model: its weights, loaded once, and its vocabulary (tokens to text and back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import llama_cpp as ll

from ..kv_cache import ModelShape
from .gguf import display_name, model_metadata, vocab_piece, vocab_text, vocab_tokenize
from .load_progress import LoadProgress


def model_shape(model: Any) -> ModelShape:
    """Layers and K/V widths of a loaded model, for sizing its KV."""
    def number(key: str) -> int | None:
        arch = model_metadata(model, "general.architecture")
        value = model_metadata(model, f"{arch}.{key}") if arch else None
        return int(value) if value and value.isdigit() else None

    heads = ll.llama_model_n_head(model)
    kv_heads = ll.llama_model_n_head_kv(model) or heads
    head_width = ll.llama_model_n_embd(model) // max(heads, 1)
    k = number("attention.key_length") or head_width
    v = number("attention.value_length") or head_width
    return ModelShape(ll.llama_model_n_layer(model), k * kv_heads, v * kv_heads)


class Model:
    """A GGUF's weights in llama.cpp (``handle``) and its vocabulary (``vocab``)."""

    def __init__(self, path: str, params: Any) -> None:
        self.path = path
        progress = LoadProgress(Path(path).name)
        progress.attach(params)
        self.handle = ll.llama_model_load_from_file(path.encode(), params)
        if not self.handle:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.vocab = ll.llama_model_get_vocab(self.handle)
        self.trained_window: int = ll.llama_model_n_ctx_train(self.handle)

    @property
    def vocab_size(self) -> int:
        return int(ll.llama_vocab_n_tokens(self.vocab))

    def shape(self) -> ModelShape:
        return model_shape(self.handle)

    def file_bytes(self) -> int:
        return Path(self.path).stat().st_size

    def metadata(self, key: str) -> str | None:
        return model_metadata(self.handle, key)

    def display_name(self) -> str:
        return display_name(self.handle, Path(self.path))

    def token_text(self, token: int) -> str:
        return vocab_text(self.vocab, token)

    @property
    def bos_token_id(self) -> int:
        return int(ll.llama_vocab_bos(self.vocab))

    @property
    def eos_token_id(self) -> int:
        return int(ll.llama_vocab_eos(self.vocab))

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return vocab_tokenize(self.vocab, text, add_special)

    def token_bytes(self, token: int) -> bytes:
        return vocab_piece(self.vocab, token, special=False)

    def ends_turn(self, token: int) -> bool:
        """Whether the token is an end of generation (an end of turn, of text...)."""
        return bool(ll.llama_vocab_is_eog(self.vocab, token))

    def close(self) -> None:
        ll.llama_model_free(self.handle)
