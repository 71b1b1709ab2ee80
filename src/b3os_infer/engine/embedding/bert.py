"""A BERT encoder in numpy: the transformer of sentence-embedding models such as MiniLM.

It reads a sentence-transformers directory (``config.json``, ``model.safetensors``,
``tokenizer.json``, ``1_Pooling/config.json``) and computes, for a batch of token lists,
the mean of the last hidden states over each list's tokens, L2-normalised: what
sentence-transformers computes with its Transformer, Pooling (mean) and Normalize
modules. No torch: the weights are memory-mapped and every step is a numpy operation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .safetensors import load_safetensors

_PREFIXES = ("", "bert.")


@dataclass(frozen=True)
class BertConfig:
    layers: int
    hidden: int
    heads: int
    eps: float
    max_positions: int
    vocab_size: int

    @classmethod
    def read(cls, path: Path) -> BertConfig:
        data = json.loads(path.read_text())
        if data.get("model_type") != "bert" or data.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: not a BERT model with gelu activations")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only absolute position embeddings are supported")
        return cls(layers=data["num_hidden_layers"], hidden=data["hidden_size"],
                   heads=data["num_attention_heads"], eps=data.get("layer_norm_eps", 1e-12),
                   max_positions=data["max_position_embeddings"],
                   vocab_size=data["vocab_size"])


@dataclass(frozen=True)
class _Dense:
    weight: np.ndarray  # (in, out): transposed once from PyTorch's (out, in)
    bias: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = x @ self.weight + self.bias
        return out


@dataclass(frozen=True)
class _Norm:
    weight: np.ndarray
    bias: np.ndarray
    eps: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        out: np.ndarray = (x - mean) / np.sqrt(var + self.eps) * self.weight + self.bias
        return out


@dataclass(frozen=True)
class _Layer:
    query: _Dense
    key: _Dense
    value: _Dense
    attention_out: _Dense
    attention_norm: _Norm
    intermediate: _Dense
    output: _Dense
    output_norm: _Norm


def _erf(x: np.ndarray) -> np.ndarray:
    """The error function to within 1.5e-7 (Abramowitz and Stegun 7.1.26)."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    out: np.ndarray = sign * (1.0 - poly * np.exp(-a * a))
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact gelu, x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class BertEncoder:
    """The weights of one model, and its forward pass over a padded batch."""

    def __init__(self, directory: Path) -> None:
        self.config = BertConfig.read(directory / "config.json")
        tensors = load_safetensors(directory / "model.safetensors")
        prefix = next((p for p in _PREFIXES if f"{p}embeddings.word_embeddings.weight"
                       in tensors), None)
        if prefix is None:
            raise ValueError(f"{directory}: model.safetensors holds no BERT embeddings")

        def get(name: str) -> np.ndarray:
            return np.asarray(tensors[prefix + name], dtype=np.float32)

        def dense(name: str) -> _Dense:
            return _Dense(np.ascontiguousarray(get(name + ".weight").T), get(name + ".bias"))

        def norm(name: str) -> _Norm:
            return _Norm(get(name + ".weight"), get(name + ".bias"), self.config.eps)

        self._words = get("embeddings.word_embeddings.weight")
        self._positions = get("embeddings.position_embeddings.weight")
        self._types = get("embeddings.token_type_embeddings.weight")
        self._norm = norm("embeddings.LayerNorm")
        self._layers = [_Layer(
            query=dense(f"encoder.layer.{i}.attention.self.query"),
            key=dense(f"encoder.layer.{i}.attention.self.key"),
            value=dense(f"encoder.layer.{i}.attention.self.value"),
            attention_out=dense(f"encoder.layer.{i}.attention.output.dense"),
            attention_norm=norm(f"encoder.layer.{i}.attention.output.LayerNorm"),
            intermediate=dense(f"encoder.layer.{i}.intermediate.dense"),
            output=dense(f"encoder.layer.{i}.output.dense"),
            output_norm=norm(f"encoder.layer.{i}.output.LayerNorm"),
        ) for i in range(self.config.layers)]

    def pooled(self, batch: list[list[int]], *, normalize: bool = True) -> np.ndarray:
        """The mean-pooled embedding of each token list, L2-normalised unless told not to:
        shape (len(batch), hidden).

        Each list is the whole input, special tokens included; lists are padded to the
        longest and the padding is masked out of attention and pooling."""
        length = max(len(tokens) for tokens in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1.0
        hidden = self._hidden(ids, mask)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        means: np.ndarray = summed / mask.sum(axis=1, keepdims=True)
        if not normalize:
            return means
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        result: np.ndarray = means / np.maximum(norms, 1e-12)
        return result

    def _hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        length = ids.shape[1]
        x = self._words[ids] + self._positions[:length][None] + self._types[0]
        x = self._norm(x)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # padding gets no attention
        for layer in self._layers:
            x = self._layer(layer, x, bias)
        return x

    def _layer(self, layer: _Layer, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        batch, length, hidden = x.shape
        heads = self.config.heads
        size = hidden // heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

        q, k, v = split(layer.query(x)), split(layer.key(x)), split(layer.value(x))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = layer.attention_norm(x + layer.attention_out(context))
        return layer.output_norm(x + layer.output(gelu(layer.intermediate(x))))
