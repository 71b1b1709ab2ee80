"""Interactive work first: the class of a generation, and how an engine orders by it.

A generation is ``interactive`` (someone waits for its first token) or ``background``
(batch work, run in spare capacity). Whoever runs background work marks it with
``background()`` around the call; the node reads ``current_priority()`` when it builds a
``GenerationRequest``, so no wire format or route has to pass the class along.

An engine that batches several sequences per step (engine/llamacpp.py) uses the rest:
it admits interactive sequences first, gives their prompt chunks the step's token budget
first, and while a seated interactive sequence still has prompt to compute, background
sequences sit the step out (``this_step``), so the step that computes the interactive
prompt holds nothing else. Background prompt chunks are also kept small
(``BACKGROUND_CHUNK``, ``prompt_chunk``): an interactive request that arrives while
one is being computed waits for that step only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, Protocol, TypeVar

Priority = Literal["interactive", "background"]

# prompt tokens a background sequence computes per step at most: a step of 128 prompt
# tokens on a small model takes a fraction of a step of 512, with about the same
# throughput (docs/benchmarks.md, n_ubatch 128)
BACKGROUND_CHUNK = 128

_current: ContextVar[Priority] = ContextVar("b3os_generation_priority",
                                            default="interactive")


@contextmanager
def background() -> Iterator[None]:
    """Generations started inside (in this task and the tasks it starts) are background."""
    token = _current.set("background")
    try:
        yield
    finally:
        _current.reset(token)


def current_priority() -> Priority:
    return _current.get()


class _Classed(Protocol):
    @property
    def priority(self) -> Priority: ...


class Scheduled(Protocol):
    """What the ordering needs of a sequence: its request's class, and its prompt tokens
    still to compute (a decoding sequence holds one: its last token)."""

    @property
    def request(self) -> _Classed: ...

    @property
    def feed(self) -> Sized: ...


S = TypeVar("S", bound=Scheduled)


def _interactive(sequence: Scheduled) -> bool:
    return sequence.request.priority == "interactive"


def _prefilling(sequence: Scheduled) -> bool:
    return len(sequence.feed) > 1


def interactive_first(sequences: Iterable[S]) -> list[S]:
    """The sequences, interactive ones first, each class in its own order."""
    listed = list(sequences)
    return [s for s in listed if _interactive(s)] + [s for s in listed if not _interactive(s)]


def this_step(active: Iterable[S]) -> list[S]:
    """The seated sequences that take part in the next step, in the order their prompt
    chunks get the step's token budget: interactive ones first; and while a seated
    interactive one still computes its prompt (someone waits for its first token), only
    the interactive ones. One that has no slot yet does not count: background sequences
    go on until the batch runner preempts one (``batches/gate.py``), so no step runs
    empty."""
    ordered = interactive_first(active)
    if any(_interactive(s) and _prefilling(s) for s in ordered):
        return [s for s in ordered if _interactive(s)]
    return ordered


def unseated_interactive(waiting: Iterable[Scheduled]) -> int:
    """Interactive sequences an admission left without a slot (the engine's load())."""
    return sum(_interactive(s) for s in waiting)


def prompt_chunk(sequence: Scheduled, budget: int) -> int:
    """Prompt tokens the sequence may take of the step's remaining ``budget``."""
    return budget if _interactive(sequence) else min(budget, BACKGROUND_CHUNK)
