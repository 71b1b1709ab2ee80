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

from ..stops import StopMatcher
from .base import Grammar, ReasoningBudget


@dataclass(frozen=True)
class Cut:
    """End this upstream request and continue with another one."""

    forced: list[int] = field(default_factory=list)   # tokens the node feeds itself


class Director:
    """Decides, piece by piece, what of an upstream stream is kept and when to splice."""

    def __init__(self, grammar: Grammar | None, reasoning: ReasoningBudget | None) -> None:
        self.grammar = grammar
        self.reasoning = reasoning
        self.reasoning_open = reasoning is not None
        self.spent = 0
        self._tail = ""
        trigger = grammar.trigger if grammar is not None else None
        self.constrained = grammar is not None and trigger is None and reasoning is None
        self._trigger = StopMatcher([trigger]) if trigger is not None else None

    def active_grammar(self) -> str | None:
        return self.grammar.gbnf if self.constrained and self.grammar else None

    def feed(self, text: str, count: int) -> tuple[str, Cut | None]:
        """The text to keep from this piece, and a cut if the request must end here."""
        if self.reasoning_open and self.reasoning is not None:
            return self._reasoning_piece(text, count, self.reasoning)
        if self._trigger is not None and not self.constrained:
            safe, matched = self._trigger.feed(text)
            if matched is not None:
                self.constrained = True
                return safe, Cut()
            return safe, None
        return text, None

    def _reasoning_piece(self, text: str, count: int,
                         budget: ReasoningBudget) -> tuple[str, Cut | None]:
        self.spent += count
        before = len(self._tail)
        self._tail += text
        end = self._tail.find(budget.end_marker)
        if end >= 0:
            self.reasoning_open = False
            keep = end + len(budget.end_marker) - before
            if self._strict_pending():
                self.constrained = True
                return text[:max(keep, 0)], Cut()
            rest, cut = self.feed(text[max(keep, 0):], 0)
            return text[:max(keep, 0)] + rest, cut
        self._tail = self._tail[-4 * len(budget.end_marker):]
        if self.spent >= budget.budget:
            return text, self._close(budget)
        return text, None

    def _strict_pending(self) -> bool:
        return self.grammar is not None and self.grammar.trigger is None

    def _close(self, budget: ReasoningBudget) -> Cut:
        self.reasoning_open = False
        if self._strict_pending():
            self.constrained = True
        return Cut(forced=list(budget.close_tokens))

    def finish(self, reason: str) -> tuple[str, Cut | None]:
        """At the end of an upstream request: held-back text, and a cut to go on."""
        if reason == "eog" and self.reasoning_open and self.reasoning is not None:
            return "", self._close(self.reasoning)
        return (self._trigger.flush() if self._trigger else ""), None
