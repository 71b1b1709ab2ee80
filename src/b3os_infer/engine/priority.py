"""Interactive work first: the class of a generation, and how an engine orders by it.

A generation is ``interactive`` (someone waits for its first token) or ``background``
(batch work, run in spare capacity). Whoever runs background work marks it with
``background()`` around the call; the node reads ``current_priority()`` when it builds a
``GenerationRequest``, so no wire format or route has to pass the class along.

An engine that batches several sequences per step (engine/llamacpp.py) uses the rest:
it admits interactive sequences first, gives their prompt chunks the step's token budget
first, and while a seated interactive sequence still has prompt to compute, background
sequences sit the step out (``runs_now``), so the step that computes the interactive
prompt holds nothing else. Background prompt chunks are also kept small
(``BACKGROUND_CHUNK``): an interactive request that arrives while one is being decoded
waits for that step only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


class Scheduled(Protocol):
    """What the ordering needs of a sequence: its class, and whether it is prefilling."""

    @property
    def priority(self) -> Priority: ...

    @property
    def prefilling(self) -> bool: ...


S = TypeVar("S", bound=Scheduled)


def interactive_first(sequences: Iterable[S]) -> list[S]:
    """The sequences, interactive ones first, each class in its own order."""
    listed = list(sequences)
    return [s for s in listed if s.priority == "interactive"] + \
        [s for s in listed if s.priority != "interactive"]


def interactive_prefills(active: Iterable[Scheduled]) -> bool:
    """A seated interactive sequence still computes its prompt (it waits for its first
    token). One that has no slot yet is not counted: background sequences go on until
    the batch runner preempts one (``batches/gate.py``), so a step never runs empty."""
    return any(s.priority == "interactive" and s.prefilling for s in active)


def runs_now(members: list[S], yielding: bool) -> list[S]:
    """The sequences that take part in this step: all of them, or, while an interactive
    one prefills (``yielding``), only the interactive ones."""
    if not yielding:
        return members
    return [m for m in members if m.priority == "interactive"]


def chunk_limit(priority: Priority, budget: int) -> int:
    """Prompt tokens a sequence may take of the step's remaining ``budget``."""
    return budget if priority == "interactive" else min(budget, BACKGROUND_CHUNK)
