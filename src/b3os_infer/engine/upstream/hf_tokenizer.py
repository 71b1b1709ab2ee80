"""A Hugging Face tokenizer directory, for a model that an upstream engine serves.

``tokenizer.json`` is read with the ``tokenizers`` package; ``tokenizer_config.json`` (or
``chat_template.jinja``) gives the chat template and special tokens. It tokenizes as the
embedded engine does: special tokens written out in the text are parsed as such, and
``token_bytes`` renders control tokens as nothing. (GGUF vocabularies: ``engine/llamacpp/gguf.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from ..tokenizer import TokenizerInfo


class HfTokenizer:
    def __init__(self, directory: Path) -> None:
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        config_path = directory / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        raw = json.loads((directory / "tokenizer.json").read_text())
        self._byte_level = _is_byte_level(raw.get("decoder"))
        self._special = {i for i, t in self._tokenizer.get_added_tokens_decoder().items()
                         if t.special}
        window = config.get("model_max_length")
        self.info = TokenizerInfo(
            chat_template=_chat_template(directory, config),
            bos_token=_token_text(config.get("bos_token")),
            eos_token=_token_text(config.get("eos_token")),
            vocab_size=self._tokenizer.get_vocab_size(with_added_tokens=True),
            trained_window=window if isinstance(window, int) and window < 10**8 else None)

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=add_special).ids)

    def token_bytes(self, token: int) -> bytes:
        if token in self._special:
            return b""
        piece = self._tokenizer.id_to_token(token)
        if piece is None:
            return b""
        if self._byte_level:
            return bytes(_BYTE_OF_CHAR[c] for c in piece)
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            return bytes([int(piece[3:5], 16)])   # SentencePiece byte fallback
        return piece.replace("\u2581", " ").encode("utf-8")

    def detokenize(self, tokens: list[int]) -> str:
        return str(self._tokenizer.decode(tokens, skip_special_tokens=False))


def _is_byte_level(decoder: Any) -> bool:
    if not isinstance(decoder, dict):
        return False
    if decoder.get("type") == "ByteLevel":
        return True
    return any(_is_byte_level(d) for d in decoder.get("decoders", []) or [])


def _chat_template(directory: Path, config: dict[str, Any]) -> str | None:
    jinja = directory / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    return template if isinstance(template, str) else None


def _token_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("content") or "")
    return value if isinstance(value, str) else ""


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: every byte as a printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


_BYTE_OF_CHAR = {c: b for b, c in _bytes_to_unicode().items()}
