"""Reading GGUF files through llama.cpp: metadata, vocabularies, and a vocabulary-only
tokenizer for models that an upstream engine serves (no weights are read).

Tokenizing parses special tokens written out in the text as such; ``vocab_piece`` renders
control tokens as nothing unless asked.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import llama_cpp as ll

from ..tokenizer import TokenizerInfo

log = logging.getLogger(__name__)

_GGML_LOG_ERROR = 4
# llama_ftype values by name, from llama-cpp-python's own constants: 3 -> "Q4_1"
FILE_TYPES = {int(value): name.removeprefix("LLAMA_FTYPE_").removeprefix("MOSTLY_")
              for name, value in vars(ll).items()
              if name.startswith("LLAMA_FTYPE_") and name != "LLAMA_FTYPE_GUESSED"}


@ll.llama_log_callback
def _quiet_log(level: int, text: bytes, user_data: Any) -> None:
    if level == _GGML_LOG_ERROR:
        log.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())


def quiet_llama() -> None:
    """Only llama.cpp's errors reach our log, and its backend is initialised."""
    ll.llama_log_set(_quiet_log, None)
    ll.llama_backend_init()


def model_metadata(model: Any, key: str) -> str | None:
    """A GGUF metadata value of a loaded llama.cpp model, as text."""
    size = ll.llama_model_meta_val_str(model, key.encode(), None, 0)
    if size < 0:
        return None
    buf = ctypes.create_string_buffer(size + 1)
    ll.llama_model_meta_val_str(model, key.encode(), buf, size + 1)
    return buf.value.decode("utf-8", "replace")


def vocab_tokenize(vocab: Any, text: str, add_special: bool) -> list[int]:
    """Token ids of ``text``; special tokens written out in it are parsed as such."""
    data = text.encode("utf-8")
    capacity = len(data) + 8
    tokens = (ll.llama_token * capacity)()
    count = ll.llama_tokenize(vocab, data, len(data), tokens, capacity, add_special, True)
    if count < 0:
        capacity = -count
        tokens = (ll.llama_token * capacity)()
        count = ll.llama_tokenize(vocab, data, len(data), tokens, capacity, add_special, True)
    return list(tokens[:count])


def vocab_text(vocab: Any, token: int) -> str:
    """A token's text as the vocabulary spells it (special tokens too); none for no token."""
    text = ll.llama_vocab_get_text(vocab, token) if token >= 0 else None
    return text.decode("utf-8", "replace") if text else ""


def vocab_piece(vocab: Any, token: int, *, special: bool) -> bytes:
    """The bytes of one token; control tokens are empty unless ``special``, and an id
    outside the vocabulary is empty too (llama.cpp would abort the process on it)."""
    if not 0 <= token < ll.llama_vocab_n_tokens(vocab):
        return b""
    buf = ctypes.create_string_buffer(64)
    size = ll.llama_token_to_piece(vocab, token, buf, 64, 0, special)
    if size < 0:
        buf = ctypes.create_string_buffer(-size)
        size = ll.llama_token_to_piece(vocab, token, buf, -size, 0, special)
    return buf.raw[:size]


def display_name(model: Any, path: Path) -> str:
    """The model's own name (``general.name``) with its quantisation, else the file name."""
    name = model_metadata(model, "general.name")
    if not name:
        return path.stem
    file_type = model_metadata(model, "general.file_type")
    kind = FILE_TYPES.get(int(file_type)) if file_type and file_type.isdigit() else None
    return f"{name} ({kind})" if kind else name


class GgufTokenizer:
    """A GGUF's vocabulary and chat template, loaded with ``vocab_only``."""

    def __init__(self, path: Path) -> None:
        quiet_llama()
        params = ll.llama_model_default_params()
        params.vocab_only = True
        self._model = ll.llama_model_load_from_file(str(path).encode(), params)
        if not self._model:
            raise RuntimeError(f"llama.cpp could not read the vocabulary of {path}")
        self._vocab = ll.llama_model_get_vocab(self._model)
        arch = model_metadata(self._model, "general.architecture")
        trained = model_metadata(self._model, f"{arch}.context_length") if arch else None
        self.info = TokenizerInfo(
            chat_template=model_metadata(self._model, "tokenizer.chat_template"),
            bos_token=vocab_text(self._vocab, int(ll.llama_vocab_bos(self._vocab))),
            eos_token=vocab_text(self._vocab, int(ll.llama_vocab_eos(self._vocab))),
            vocab_size=int(ll.llama_vocab_n_tokens(self._vocab)),
            trained_window=int(trained) if trained and trained.isdigit() else None,
            name=display_name(self._model, path))

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return vocab_tokenize(self._vocab, text, add_special)

    def token_bytes(self, token: int) -> bytes:
        return vocab_piece(self._vocab, token, special=False)

    def detokenize(self, tokens: list[int]) -> str:
        data = b"".join(vocab_piece(self._vocab, t, special=True) for t in tokens)
        return data.decode("utf-8", "replace")
