"""What each upstream engine's OpenAI-compatible ``/v1/completions`` accepts and returns.

The node sends a rendered, tokenized prompt and gets text back; templating, counting and
parsing stay on the node. Sampling is sent explicitly and in full, so that neither the
engine's own defaults (llama.cpp: top_k 40, min_p 0.05, repeat penalty 1.1) nor a model's
``generation_config.json`` (vLLM applies it by default) change the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core import Sampling
from ...errors import UnsupportedParameter
from .check import TokenizeApi


@dataclass(frozen=True)
class Flavour:
    name: str
    token_prompt: bool            # prompt as token ids (else as text with special tokens)
    grammar_field: str            # where a GBNF grammar goes
    disabled_top_k: int           # the value of top_k that means "all tokens"
    repeat_field: str             # the multiplicative repeat penalty, sent as 1.0 (off)
    extra: tuple[tuple[str, Any], ...] = ()
    token_ids_logprobs: bool = False   # logprobs can name tokens by id
    health_path: str = "/health"       # answers without waiting for a running generation
    # the engine's start option without which its usage leaves cached tokens out
    cache_report_option: str | None = None
    tokenize: TokenizeApi | None = None    # where its tokenizer can be probed (none: SGLang)


FLAVOURS = {
    # vLLM >= 0.12: grammars in structured_outputs; token ids in each chunk
    "vllm": Flavour("vllm", True, "structured_outputs.grammar", -1, "repetition_penalty",
                    (("skip_special_tokens", False), ("return_token_ids", True),
                     ("stream_options", {"include_usage": True})), token_ids_logprobs=True,
                    cache_report_option="--enable-prompt-tokens-details",
                    tokenize=TokenizeApi("/tokenize", "prompt", (("add_special_tokens", False),),
                                         with_model=True)),
    "sglang": Flavour("sglang", True, "ebnf", -1, "repetition_penalty",
                      (("skip_special_tokens", False),
                       ("stream_options", {"include_usage": True})),
                      cache_report_option="--enable-cache-report"),
    "llama-server": Flavour("llama-server", True, "grammar", 0, "repeat_penalty",
                            (("return_tokens", True),),
                            tokenize=TokenizeApi("/tokenize", "content",
                                                 (("add_special", False),))),
    # llama-cpp-python's server takes only text prompts; logprobs=0 lists each chunk's tokens.
    # It has no /health, and its /v1/models takes the model lock, which (with its default
    # interrupt_requests) cancels the completion that is streaming: probe the schema instead
    "llama-cpp-python": Flavour("llama-cpp-python", False, "grammar", 0, "repeat_penalty",
                                (("logprobs", 0),), health_path="/openapi.json",
                                tokenize=TokenizeApi("/extras/tokenize", "input")),
}


def completion_body(flavour: Flavour, *, model: str, prompt: list[int] | str, max_tokens: int,
                    sampling: Sampling, grammar: str | None,
                    top_logprobs: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
        "temperature": max(sampling.temperature, 0.0), "top_p": sampling.top_p,
        "top_k": sampling.top_k if sampling.top_k > 0 else flavour.disabled_top_k,
        "min_p": 0.0, flavour.repeat_field: 1.0,
        "presence_penalty": sampling.presence_penalty,
        "frequency_penalty": sampling.frequency_penalty,
    }
    body.update(flavour.extra)
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.logit_bias:  # every flavour takes OpenAI's map of token id to bias
        body["logit_bias"] = {str(token): bias for token, bias in sampling.logit_bias}
    if grammar is not None:
        head, _, tail = flavour.grammar_field.partition(".")
        body[head] = {tail: grammar} if tail else grammar
    if top_logprobs is not None:
        if not flavour.token_ids_logprobs:
            raise UnsupportedParameter(
                f"log-probabilities are not available from this model's engine "
                f"({flavour.name} does not name tokens by id)", param="logprobs")
        body["logprobs"] = top_logprobs
        body["return_tokens_as_token_ids"] = True
    return body


@dataclass(frozen=True)
class Piece:
    """One streamed chunk: its text, how many tokens it holds, and how the stream ended."""

    text: str
    count: int
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float | None, ...] = ()
    top: tuple[tuple[tuple[int, float], ...], ...] = ()
    finish: str | None = None
    cached_tokens: int | None = None
    prompt_tokens: int | None = None


def parse_chunk(data: dict[str, Any]) -> Piece:
    choices = data.get("choices") or []
    choice = choices[0] if choices else {}
    text = choice.get("text") or ""
    ids = _ids(choice.get("token_ids")) or _ids(choice.get("tokens"))
    logprobs = choice.get("logprobs") or {}
    listed = logprobs.get("tokens") or []
    count = len(ids) if ids else len(listed) if listed else (1 if text else 0)
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Piece(text=text, count=count, token_ids=ids,
                 logprobs=tuple(logprobs.get("token_logprobs") or ()),
                 top=tuple(_top(t) for t in logprobs.get("top_logprobs") or ()),
                 finish=choice.get("finish_reason"),
                 cached_tokens=details.get("cached_tokens"),
                 prompt_tokens=usage.get("prompt_tokens"))


def _ids(value: Any) -> tuple[int, ...]:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return ()


def _top(entry: Any) -> tuple[tuple[int, float], ...]:
    """``{"token_id:42": -0.1, ...}`` (vLLM's return_tokens_as_token_ids), best first."""
    if not isinstance(entry, dict):
        return ()
    pairs = [(int(k.removeprefix("token_id:")), float(v)) for k, v in entry.items()
             if isinstance(k, str) and k.startswith("token_id:")]
    return tuple(sorted(pairs, key=lambda p: -p[1]))
