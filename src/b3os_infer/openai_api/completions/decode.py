"""Legacy completion requests: validated as ``CompletionCreateParams``, then checked for
what no type says (``best_of`` equal to ``n``, no ``echo`` with ``logprobs``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core import TextRequest
from ...wire_models import decode
from ..decode import invalid
from ..policy import COMPLETIONS_OUTPUT_CAP
from ..sampling_fields import sampling_of
from ..wire.common import stop_strings
from ..wire.completions import CompletionCreateParams

Prompt = str | list[int]


@dataclass(frozen=True)
class LegacyRequest:
    model: str
    prompts: list[Prompt]
    base: TextRequest  # everything but the prompt
    n: int
    echo: bool
    logprobs: int | None
    stream: bool
    include_usage: bool


def decode_completion_request(body: Mapping[str, Any]) -> LegacyRequest:
    params = decode(CompletionCreateParams, body)
    n = params.n or 1
    if params.best_of is not None and params.best_of != n:
        raise invalid("best_of", "only `best_of` equal to `n` is served (every candidate "
                      "is returned)")
    if params.echo and params.logprobs is not None:
        raise invalid("echo", "`echo` with `logprobs` would need the prompt's log-"
                      "probabilities, which are not computed")
    base = TextRequest(model=params.model, prompt=[],
                       max_tokens=params.max_tokens or COMPLETIONS_OUTPUT_CAP.default,
                       stop=stop_strings(params.stop), sampling=sampling_of(params),
                       top_logprobs=params.logprobs)
    options = params.stream_options
    return LegacyRequest(params.model, _prompts(params.prompt), base, n, bool(params.echo),
                         params.logprobs, bool(params.stream),
                         options is not None and bool(options.include_usage))


def _prompts(prompt: str | list[int] | list[str | list[int]]) -> list[Prompt]:
    """One prompt or several: a list of token ids is one prompt."""
    if isinstance(prompt, str):
        return [prompt]
    if all(isinstance(item, int) for item in prompt):
        return [[item for item in prompt if isinstance(item, int)]]
    return [item for item in prompt if not isinstance(item, int)]
