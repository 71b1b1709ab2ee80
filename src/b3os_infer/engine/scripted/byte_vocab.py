"""A byte-level vocabulary for engines without a model file (the scripted engine).

Ids 0-255 are the bytes, then ChatML's special tokens, then whole pieces of text that an
engine registers so that one scripted piece is one token. ``tokenize`` reads special
tokens written out in the text as such (as llama.cpp does with ``parse_special``) and
everything else byte by byte; ``token_bytes`` renders special tokens as nothing.
"""

from __future__ import annotations

import re

END_OF_TEXT = "<|endoftext|>"
TURN_START = "<|im_start|>"
TURN_END = "<|im_end|>"
SPECIAL_TOKENS = (END_OF_TEXT, TURN_START, TURN_END)
_BYTES = 256


class ByteVocab:
    def __init__(self) -> None:
        self._special = {text: _BYTES + i for i, text in enumerate(SPECIAL_TOKENS)}
        self._pieces: dict[str, int] = {}
        self._piece_text: dict[int, str] = {}
        self._split = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL_TOKENS) + ")")

    @property
    def size(self) -> int:
        return _BYTES + len(self._special) + len(self._pieces)

    def register(self, piece: str) -> int:
        """The id of a piece of text that is to be generated as one token."""
        if piece in self._special:
            return self._special[piece]
        if len(piece.encode("utf-8")) == 1:
            return piece.encode("utf-8")[0]
        if piece not in self._pieces:
            token = self.size
            self._pieces[piece] = token
            self._piece_text[token] = piece
        return self._pieces[piece]

    def tokenize(self, text: str) -> list[int]:
        tokens: list[int] = []
        for part in self._split.split(text):
            if part in self._special:
                tokens.append(self._special[part])
            else:
                tokens.extend(part.encode("utf-8"))
        return tokens

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token stands for in generated text (none for special tokens)."""
        if 0 <= token < _BYTES:
            return bytes([token])
        return self._piece_text.get(token, "").encode("utf-8")

    def detokenize(self, tokens: list[int]) -> str:
        """The text of ``tokens`` with special tokens written out."""
        names = {token: text for text, token in self._special.items()}
        data = b"".join(names[t].encode() if t in names else self.token_bytes(t)
                        for t in tokens)
        return data.decode("utf-8", "replace")
