"""One request inside the engine (its slot, sampler, tokens to feed and reply so far), and
the outbox that hands its events to the event loop waiting for them."""

from __future__ import annotations

import asyncio
import codecs
from dataclasses import dataclass, field
from typing import Any

from ...errors import InternalError
from ..base import EngineEvent, GenerationRequest
from ..reasoning import ReasoningTracker
from .drafting import DraftControl, NgramIndex
from .lanes import Lane, Slot
from .prefill_log import PrefillLog


def failed(exc: Exception) -> InternalError:
    return InternalError("the engine failed while generating", detail=repr(exc))


@dataclass(eq=False)
class Sequence:
    request: GenerationRequest
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue[EngineEvent | BaseException]
    cancelled: bool = False
    slot: Slot | None = None
    sampler: Any = None
    position: int = 0
    feed: list[int] = field(default_factory=list)
    generated: int = 0
    cached: int = 0
    reasoning: ReasoningTracker | None = None
    logprobs: tuple[float, tuple[tuple[int, float], ...]] | None = None
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))
    progress: PrefillLog | None = None
    # its lane's window is full: it waits for a slot in a longer lane
    moving: bool = False
    # speculative decoding: its tokens so far, how much it drafts, the draft in this step
    history: NgramIndex | None = None
    drafts: DraftControl = field(default_factory=DraftControl)
    draft: list[int] = field(default_factory=list)
    reply: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.request.reasoning is not None:
            self.reasoning = ReasoningTracker(self.request.reasoning)

    @property
    def lane(self) -> Lane:
        assert self.slot is not None and self.slot.lane is not None
        return self.slot.lane


class Outbox:
    """Events of one step, handed to each event loop in a single wake-up.

    With two cores, waking the loop once per token per sequence steals enough CPU from
    llama.cpp's threads to cancel out what batching gains.
    """

    def __init__(self) -> None:
        self._events: dict[asyncio.AbstractEventLoop, list[tuple[Sequence, Any]]] = {}

    def put(self, sequence: Sequence, event: EngineEvent | BaseException) -> None:
        self._events.setdefault(sequence.loop, []).append((sequence, event))

    def flush(self) -> None:
        for loop, events in self._events.items():
            try:
                loop.call_soon_threadsafe(_deliver, events)
            except RuntimeError:  # that loop is closed: nobody is listening any more
                pass
        self._events = {}


def _deliver(events: list[tuple[Sequence, Any]]) -> None:
    for sequence, event in events:
        sequence.out.put_nowait(event)
