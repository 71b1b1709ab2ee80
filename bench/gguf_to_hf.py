"""Turns a Qwen2 GGUF into a Hugging Face model directory that vLLM loads.

vLLM's CPU build reads safetensors, not llama.cpp's quantized blocks. This writes, from the
GGUF alone (no hub): ``model.safetensors`` (every tensor dequantized to float32 by the
``gguf`` package, stored as bfloat16), ``config.json`` from the GGUF's
``qwen2.*`` metadata, ``tokenizer.json`` rebuilt from ``tokenizer.ggml.*`` (byte-level BPE with
Qwen2's pre-tokenizer), ``tokenizer_config.json`` with the chat template, and
``generation_config.json`` naming every end-of-generation token.

It runs in the vLLM venv (``gguf``, ``torch``, ``safetensors``, ``tokenizers``)::

    python bench/gguf_to_hf.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

# Qwen2's pre-tokenizer split, as its tokenizer.json writes it (llama.cpp's "qwen2" pre type)
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTROL, USER_DEFINED = 3, 4   # llama.cpp's token types that tokenizers treats as special

# llama.cpp tensor names (per block after "blk.N.") -> Hugging Face Qwen2 names
BLOCK_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm",
             "output": "lm_head"}


def metadata(reader: GGUFReader) -> dict[str, Any]:
    """Every key-value pair, decoded to Python values (strings, numbers, lists)."""
    return {name: _value(field) for name, field in reader.fields.items()
            if not name.startswith("GGUF.")}


def _value(field: Any) -> Any:
    types = field.types
    if types and types[0] == GGUFValueType.ARRAY:
        items = [field.parts[i] for i in field.data]
        if types[-1] == GGUFValueType.STRING:
            return [bytes(item).decode("utf-8") for item in items]
        return [item.tolist()[0] for item in items]
    part = field.parts[field.data[0]]
    if types and types[0] == GGUFValueType.STRING:
        return bytes(part).decode("utf-8")
    return part.tolist()[0]


def hf_name(gguf_name: str) -> str:
    stem, _, kind = gguf_name.rpartition(".")
    if stem.startswith("blk."):
        _, layer, part = stem.split(".", 2)
        return f"model.layers.{layer}.{BLOCK_NAMES[part]}.{kind}"
    return f"{TOP_NAMES[stem]}.{kind}"


def tensors(reader: GGUFReader) -> dict[str, torch.Tensor]:
    out = {}
    for tensor in reader.tensors:
        values = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        shape = tuple(int(n) for n in reversed(tensor.shape.tolist()))
        out[hf_name(tensor.name)] = torch.from_numpy(values.reshape(shape)).to(torch.bfloat16)
    return out


def config(meta: dict[str, Any], vocab_rows: int, tied: bool) -> dict[str, Any]:
    arch = meta["general.architecture"]
    if arch != "qwen2":
        raise SystemExit(f"only qwen2 GGUFs are converted (this one is {arch!r})")
    p = f"{arch}."
    heads = meta[p + "attention.head_count"]
    return {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": meta[p + "embedding_length"],
        "intermediate_size": meta[p + "feed_forward_length"],
        "num_hidden_layers": meta[p + "block_count"], "num_attention_heads": heads,
        "num_key_value_heads": meta.get(p + "attention.head_count_kv", heads),
        "max_position_embeddings": meta[p + "context_length"],
        "rms_norm_eps": meta[p + "attention.layer_norm_rms_epsilon"],
        "rope_theta": meta.get(p + "rope.freq_base", 10000.0),
        "vocab_size": vocab_rows, "tie_word_embeddings": tied,
        "use_sliding_window": False, "torch_dtype": "bfloat16",
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta["tokenizer.ggml.eos_token_id"],
    }


def tokenizer(meta: dict[str, Any]) -> Tokenizer:
    if meta.get("tokenizer.ggml.model") != "gpt2" or meta.get("tokenizer.ggml.pre") != "qwen2":
        raise SystemExit("only Qwen2's byte-level BPE tokenizer is converted")
    tokens: list[str] = meta["tokenizer.ggml.tokens"]
    kinds: list[int] = meta["tokenizer.ggml.token_type"]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    built = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                                 fuse_unk=False, byte_fallback=False))
    built.normalizer = normalizers.NFC()
    built.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    built.decoder = decoders.ByteLevel()
    built.add_special_tokens([AddedToken(t, special=True, normalized=False)
                              for t, k in zip(tokens, kinds, strict=True)
                              if k in (CONTROL, USER_DEFINED)])
    return built


def end_tokens(meta: dict[str, Any], tokens: list[str]) -> list[int]:
    """The ids that end a generation: the GGUF's eos/eot/eom, and the chat turn ends."""
    named = [meta.get(f"tokenizer.ggml.{k}_token_id") for k in ("eos", "eot", "eom")]
    ends = {i for i in named if isinstance(i, int)}
    ends |= {i for i, t in enumerate(tokens) if t in ("<|im_end|>", "<|endoftext|>")}
    return sorted(ends)


def tokenizer_config(meta: dict[str, Any], tokens: list[str]) -> dict[str, Any]:
    def name(key: str) -> str | None:
        index = meta.get(f"tokenizer.ggml.{key}_token_id")
        return tokens[index] if isinstance(index, int) else None

    return {"tokenizer_class": "Qwen2TokenizerFast", "chat_template":
            meta.get("tokenizer.chat_template"), "bos_token": None,
            "eos_token": name("eos"), "pad_token": name("padding"),
            "add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token", False)),
            "model_max_length": meta["qwen2.context_length"]}


def convert(gguf_path: Path, out: Path) -> None:
    reader = GGUFReader(gguf_path)
    meta = metadata(reader)
    weights = tensors(reader)
    tied = "lm_head.weight" not in weights
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    rows = weights["model.embed_tokens.weight"].shape[0]
    _write(out / "config.json", config(meta, rows, tied))
    tokens = meta["tokenizer.ggml.tokens"]
    tokenizer(meta).save(str(out / "tokenizer.json"))
    _write(out / "tokenizer_config.json", tokenizer_config(meta, tokens))
    _write(out / "generation_config.json", {"eos_token_id": end_tokens(meta, tokens)})


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python bench/gguf_to_hf.py MODEL.gguf OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
