"""How much a reply may write: one decision for every API.

A client's cap above what the model can write (the card's ``max_output_tokens``) is
lowered to it, never refused: clients send 16,384 to 128,000 by default for models they
do not know. A request that names no cap gets the model's default output cap: the
operator's ``default_output_tokens``, else all the model can write. Either way the room
left in the window bounds it while the reply is written; a reply cut there stops with
``window``, one cut at its cap with ``length``.

Each API says in its policy module which field asks for the cap and what a request
without it gets (``OutputCapRule``); only the legacy completions have a default of their
own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core import ChatRequest, Thinking
from .cards import ModelCard


@dataclass(frozen=True)
class OutputCapRule:
    """One API's row: the wire field that asks for the cap, and what a request without it
    gets (None: the model's default output cap)."""

    field: str
    default: int | None = None


def output_cap(asked: int | None, card: ModelCard) -> int:
    """The cap a reply is generated with, before the window's room bounds it."""
    wanted = asked if asked is not None else card.default_output_tokens
    return card.max_output_tokens if wanted is None else min(wanted, card.max_output_tokens)


def capped(request: ChatRequest, card: ModelCard) -> ChatRequest:
    """The request with its cap decided, and a thinking budget that fits inside it."""
    cap = output_cap(request.max_tokens, card)
    thinking = _within(request.thinking, cap) if request.thinking is not None else None
    return replace(request, max_tokens=cap, thinking=thinking)


def _within(thinking: Thinking, cap: int) -> Thinking:
    """An adaptive budget is at most half the cap (as it was decoded); an explicit one
    that reaches the cap is lowered to half of it."""
    half = max(1, cap // 2)
    budget = thinking.budget_tokens
    if thinking.adaptive:
        budget = min(budget, half)
    elif budget >= cap:
        budget = half
    return thinking if budget == thinking.budget_tokens else replace(thinking,
                                                                     budget_tokens=budget)


__all__ = ["OutputCapRule", "capped", "output_cap"]
