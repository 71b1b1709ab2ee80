"""Interactive work first, inside the continuous batch (the class: engine/priority.py).

The scheduler admits interactive sequences to free slots before background ones. In each
step of a lane, interactive sequences come first (their prompt chunks get the step's token
budget first), and while a seated interactive sequence still computes its prompt (someone
waits for its first token), the background sequences of every lane sit the step out, so
that prompt is computed as fast as on an idle engine. The background prompt chunks of a
step take at most ``BACKGROUND_STEP_TOKENS`` tokens together (``PromptBudget``), so an
interactive request that arrives during a step waits for a short one only. An
interactive sequence left without a slot is counted (``unseated_interactive``): the batch
runner preempts a batch request for it (batches/gate.py).

The functions read only a sequence's request class and its feed (the prompt tokens still
to compute; a decoding sequence holds one, its last token).
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import Protocol, TypeVar

from ..priority import Priority

# prompt tokens the background sequences of a step compute together, at most: on 2 cores
# four batch prompts in one step took 430 ms (SmolLM2), a step an interactive request
# arriving meanwhile waits for; with 32, its first token came within 1.13-1.26x of the
# idle figure, against 1.41-2.11x with 128 per sequence (docs/benchmarks.md, issue 28)
BACKGROUND_STEP_TOKENS = 32


class _Classed(Protocol):
    @property
    def priority(self) -> Priority: ...


class Scheduled(Protocol):
    """What the ordering needs of a sequence."""

    @property
    def request(self) -> _Classed: ...

    @property
    def feed(self) -> Sized: ...


S = TypeVar("S", bound=Scheduled)


def is_interactive(sequence: Scheduled) -> bool:
    return sequence.request.priority == "interactive"


def prefilling(sequence: Scheduled) -> bool:
    return len(sequence.feed) > 1


def interactive_first(sequences: Iterable[S]) -> list[S]:
    """The sequences, interactive ones first, each class in its own order."""
    listed = list(sequences)
    return [s for s in listed if is_interactive(s)] + \
        [s for s in listed if not is_interactive(s)]


def interactive_prefills(active: Iterable[Scheduled]) -> bool:
    """Whether a seated interactive sequence still computes its prompt."""
    return any(is_interactive(s) and prefilling(s) for s in active)


def this_step(members: Iterable[S], *, yielding: bool) -> list[S]:
    """A lane's sequences that take part in its next step, in the order their prompt
    chunks get the step's budget: interactive ones first; while ``yielding`` (an
    interactive sequence prefills, ``interactive_prefills``), the interactive ones only."""
    ordered = interactive_first(members)
    if yielding:
        return [s for s in ordered if is_interactive(s)]
    return ordered


class PromptBudget:
    """A step's prompt tokens: ``total`` for all its chunks, of which background chunks
    together take at most ``background``."""

    def __init__(self, total: int, background: int = BACKGROUND_STEP_TOKENS) -> None:
        self.total = total
        self.background = background

    def grant(self, sequence: Scheduled, wanted: int) -> int:
        """Prompt tokens the sequence computes in this step, of the ``wanted`` ones."""
        interactive = is_interactive(sequence)
        limit = self.total if interactive else min(self.total, self.background)
        take = max(min(limit, wanted), 0)
        self.total -= take
        if not interactive:
            self.background -= take
        return take


def unseated_interactive(waiting: Iterable[Scheduled]) -> int:
    """Interactive sequences an admission left without a slot."""
    return sum(is_interactive(s) for s in waiting)
