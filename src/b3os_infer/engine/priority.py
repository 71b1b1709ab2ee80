"""Interactive work first: the class of a generation.

A generation is ``interactive`` (someone waits for its first token) or ``background``
(batch work, run in spare capacity). Whoever runs background work marks it with
``background()`` around the call; the node reads ``current_priority()`` when it builds a
``GenerationRequest``, so no wire format or route has to carry the class. An engine that
runs several sequences per step orders them by it (engine/llamacpp/precedence.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

Priority = Literal["interactive", "background"]

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
