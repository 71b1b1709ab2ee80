"""Lazy grammars and reasoning budgets over an engine that knows neither.

An upstream engine takes one grammar for a whole request and cannot be told to close a
reasoning section. The node does both by splicing: it ends the upstream request at the
right point and starts another one whose prompt is everything so far (plus the tokens it
forces), with the grammar from there on.

- A lazy grammar (``Grammar.trigger``): the reply runs free until the trigger text shows
  up; the text before it is kept, the rest of that request is dropped, and the next
  request generates the trigger and what follows under the grammar. The trigger is looked
  for once reasoning is over.
- A reasoning budget: when it is spent, or the model ends its turn while reasoning, the
  node feeds the close tokens itself and goes on. A strict grammar starts after reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...stops import StopMatcher
from ..base import Grammar, ReasoningBudget
from ..reasoning import ReasoningTracker


@dataclass(frozen=True)
class Cut:
    """End this upstream request and continue with another one."""

    forced: list[int] = field(default_factory=list)   # tokens the node feeds itself


class Director:
    """Decides, piece by piece, what of an upstream stream is kept and when to splice."""

    def __init__(self, grammar: Grammar | None, reasoning: ReasoningBudget | None) -> None:
        self.grammar = grammar
        self.reasoning = ReasoningTracker(reasoning) if reasoning is not None else None
        trigger = grammar.trigger if grammar is not None else None
        self.constrained = grammar is not None and trigger is None and reasoning is None
        self._trigger = StopMatcher([trigger]) if trigger is not None else None

    @property
    def reasoning_open(self) -> bool:
        return self.reasoning is not None and self.reasoning.open

    def active_grammar(self) -> str | None:
        return self.grammar.gbnf if self.constrained and self.grammar else None

    def feed(self, text: str, count: int) -> tuple[str, Cut | None]:
        """The text to keep from this piece, and a cut if the request must end here."""
        if self.reasoning is not None and self.reasoning_open:
            return self._reasoning_piece(text, count, self.reasoning)
        if self._trigger is not None and not self.constrained:
            safe, matched = self._trigger.feed(text)
            if matched is not None:
                self.constrained = True
                return safe, Cut()
            return safe, None
        return text, None

    def _reasoning_piece(self, text: str, count: int,
                         reasoning: ReasoningTracker) -> tuple[str, Cut | None]:
        keep = reasoning.observe(text, count)
        if keep is not None:
            if self._strict_pending():
                self.constrained = True
                return text[:keep], Cut()
            rest, cut = self.feed(text[keep:], 0)
            return text[:keep] + rest, cut
        if reasoning.must_close():
            return text, self._close(reasoning)
        return text, None

    def _strict_pending(self) -> bool:
        return self.grammar is not None and self.grammar.trigger is None

    def _close(self, reasoning: ReasoningTracker) -> Cut:
        if self._strict_pending():
            self.constrained = True
        return Cut(forced=reasoning.close())

    def finish(self, reason: str) -> tuple[str, Cut | None]:
        """At the end of an upstream request: held-back text, and a cut to go on."""
        if reason == "eog" and self.reasoning is not None and \
                self.reasoning.must_close(end_of_turn=True):
            return "", self._close(self.reasoning)
        return (self._trigger.flush() if self._trigger else ""), None
