"""Where a reply stands in its reasoning section, and when the engine must close it.

One tracker serves every engine: the embedded one feeds it a token at a time, the
upstream splice director a streamed piece of several tokens, the scripted engine its
scripted pieces. The section ends when ``end_marker`` shows up in the text (also when it
spans pieces); it must be closed by the engine when the budget is spent first or the
model ends its turn while still reasoning.
"""

from __future__ import annotations

from .base import ReasoningBudget


class ReasoningTracker:
    def __init__(self, budget: ReasoningBudget) -> None:
        self.budget = budget
        self.open = True
        self.spent = 0
        self._tail = ""

    def observe(self, text: str, count: int = 1) -> int | None:
        """Count ``count`` tokens of ``text``; where the section ended in it, if it did.

        Returns the offset in ``text`` just past the end marker (the rest of ``text`` is
        reply), or None while reasoning goes on (or once it is over)."""
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

    def must_close(self, end_of_turn: bool = False) -> bool:
        """The engine feeds ``close()``'s tokens itself: budget spent, or turn ending."""
        return self.open and (end_of_turn or self.spent >= self.budget.budget)

    def close(self) -> list[int]:
        """The section is over; the tokens that close it, for the engine to feed."""
        self.open = False
        return list(self.budget.close_tokens)
