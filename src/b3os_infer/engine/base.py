"""The engine seam: submit a token prompt, get an async stream of token events.

Engines know nothing of chat, templates or wire formats. Cancellation is by
closing the stream (or cancelling the task that reads it): the engine then frees
the sequence.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..core import Sampling
from ..errors import InvalidRequest
from .priority import Priority, current_priority

FinishReason = Literal["eog", "length"]


@dataclass(frozen=True)
class Grammar:
    """A GBNF grammar; with a trigger it only applies from that text on (lazy)."""

    gbnf: str
    trigger: str | None = None


class GrammarCompiler(Protocol):
    """JSON Schema into the grammar language of the engines that apply grammars."""

    def json_schema(self, schema: dict[str, Any], prop_order: list[str] | None = None) -> str:
        """A grammar whose ``root`` rule is the schema; raises if it cannot be enforced."""
        ...


@dataclass(frozen=True)
class ReasoningBudget:
    """The reply starts inside a reasoning section that ends at ``end_marker``; with a
    ``start_marker``, the model decides: the section opens only when the reply starts
    with that marker, and a reply that starts otherwise has none.

    When ``budget`` tokens are spent first, or the model tries to end its turn while
    still reasoning, the engine feeds ``close_tokens`` itself and goes on.
    """

    budget: int
    end_marker: str
    close_tokens: list[int]
    start_marker: str | None = None


@dataclass(frozen=True)
class GenerationRequest:
    prompt: list[int]
    max_tokens: int
    sampling: Sampling = field(default_factory=Sampling)
    grammar: Grammar | None = None
    reasoning: ReasoningBudget | None = None
    # None: no log-probabilities; N >= 0: each token's own and the N most likely
    top_logprobs: int | None = None
    # background work (a batch) yields to interactive requests: the class of the task that
    # builds the request, unless given (engine/priority.py)
    priority: Priority = field(default_factory=current_priority)


NOT_A_TOKEN = -1   # TokenEvent.token of text that is no generated token (a decoder's tail)


def check_fits(request: GenerationRequest, window: int) -> None:
    """What every engine refuses before it starts: no prompt, or more than the window."""
    if not request.prompt:
        raise InvalidRequest("the prompt is empty", param="turns")
    if len(request.prompt) + request.max_tokens > window:
        raise InvalidRequest("the prompt and max_tokens exceed the context window",
                             param="output_cap")


@dataclass(frozen=True)
class TokenEvent:
    """One sampled token and the text it completes (may be empty mid-character).

    ``token`` is its id; an engine that streams a token's text without its id uses a
    negative number other than ``NOT_A_TOKEN`` (the token still counts as generated).

    With ``top_logprobs`` asked for, ``logprob`` is the token's log-probability under the
    model's distribution (before sampling settings) and ``top`` the most likely
    alternatives as (token, logprob), most likely first.
    """

    token: int
    text: str
    logprob: float | None = None
    top: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class Admitted:
    """The request has a sequence slot; ``cached_tokens`` of its prompt are reused KV."""

    prompt_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class GenerationDone:
    reason: FinishReason
    prompt_tokens: int
    cached_tokens: int
    generated_tokens: int
    # speculative decoding: tokens drafted for verification, and how many of them the
    # model's own sampling confirmed (engines that do not draft report 0)
    drafted_tokens: int = 0
    accepted_tokens: int = 0


EngineEvent = Admitted | TokenEvent | GenerationDone


@dataclass(frozen=True)
class EngineInfo:
    context_window: int
    vocab_size: int
    description: str
    applies_grammars: bool = False   # honours GenerationRequest.grammar
    # sequences it runs at once (None: no fixed number); more wait in its queue
    slots: int | None = None
    # what computes it: "cpu" or a GPU backend ("cuda", "metal", ...); None: not known here
    device: str | None = None


@dataclass(frozen=True)
class KvUsage:
    """How much of an engine's KV cache holds tokens: ``used`` of ``capacity`` cells."""

    used: int
    capacity: int

    @property
    def fraction(self) -> float:
        return min(self.used / self.capacity, 1.0) if self.capacity > 0 else 0.0


def kv_usage(engine: object) -> KvUsage | None:
    """The engine's KV usage, if it can tell: an engine may have a ``kv_usage()`` method
    returning ``KvUsage``; one that has none (an engine over HTTP) reports nothing."""
    method = getattr(engine, "kv_usage", None)
    usage = method() if callable(method) else None
    return usage if isinstance(usage, KvUsage) else None


@runtime_checkable
class ReportsProblems(Protocol):
    """An engine that can say why it cannot serve its model as configured."""

    def problem(self) -> str | None: ...


class Engine(Protocol):
    info: EngineInfo

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token stands for in generated text."""
        ...

    def generate(self, request: GenerationRequest) -> AsyncGenerator[EngineEvent, None]: ...

    def healthy(self) -> bool: ...

    def load(self) -> dict[str, int]:
        """Sequences running and waiting, for health checks and tests."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...
