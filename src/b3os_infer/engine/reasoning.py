"""Where a reply stands in its reasoning section, and when the engine must close it.

One tracker serves every engine: the embedded one feeds it a token at a time, the
upstream splice director a streamed piece of several tokens, the scripted engine its
scripted pieces. The section ends when ``end_marker`` shows up in the text (also when it
spans pieces); it must be closed by the engine when the budget is spent first or the
model ends its turn while still reasoning. A budget with a ``start_marker`` waits for the
reply's start: the section opens when the reply starts with the marker, and never when
it starts with anything else.
"""

from __future__ import annotations

from .base import ReasoningBudget


class ReasoningTracker:
    def __init__(self, budget: ReasoningBudget) -> None:
        self.budget = budget
        self.waiting = budget.start_marker is not None
        self.open = not self.waiting
        self.spent = 0
        self._tail = ""
        self._head = ""

    def observe(self, text: str, count: int = 1) -> int | None:
        """Count ``count`` tokens of ``text``; where the section ended in it, if it did.

        Returns the offset in ``text`` just past the end marker (the rest of ``text`` is
        reply), or None while reasoning goes on (or once it is over)."""
        if self.waiting:
            return self._await_start(text, count)
        if not self.open:
            return None
        self.spent += count
        marker = self.budget.end_marker
        before = len(self._tail)
        self._tail += text
        end = self._tail.find(marker)
        if end >= 0:
            self.open = False
            return max(end + len(marker) - before, 0)
        self._tail = self._tail[-4 * len(marker):]
        return None

    def _await_start(self, text: str, count: int) -> int | None:
        """The reply's first characters: do they open the section?"""
        marker = self.budget.start_marker or ""
        self._head += text
        head = self._head.lstrip()
        if head.startswith(marker):
            self.waiting, self.open = False, True
            rest = head[len(marker):]   # the marker ends in this piece: rest is its tail
            ended = self.observe(rest, count)
            return None if ended is None else len(text) - len(rest) + ended
        if not marker.startswith(head):
            self.waiting = False   # the reply starts with something else: no section
        return None

    def must_close(self, end_of_turn: bool = False) -> bool:
        """The engine feeds ``close()``'s tokens itself: budget spent, or turn ending."""
        return self.open and (end_of_turn or self.spent >= self.budget.budget)

    def close(self) -> list[int]:
        """The section is over; the tokens that close it, for the engine to feed."""
        self.open = False
        return list(self.budget.close_tokens)
