"""Long prompts in the log: tokens computed of the total and the rate, while it lasts.

A prompt of Claude Code's size takes minutes on a small CPU; the log says where it is
(every ``every`` seconds) and how long it took, so an operator sees progress, not silence.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("b3os_infer.engine.prefill")

LONG_PREFILL_TOKENS = 2048
PROGRESS_SECONDS = 10.0


class PrefillLog:
    def __init__(self, label: str, total: int, cached: int, *, every: float = PROGRESS_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.total = total
        self.cached = cached
        self.done = 0
        self._every = every
        self._clock = clock
        self._started = clock()
        self._last = self._started
        log.info("%s: prefill of %d tokens (%d cached) started", label, total - cached, cached)

    def rate(self) -> float:
        elapsed = self._clock() - self._started
        return self.done / elapsed if elapsed > 0 else 0.0

    def advance(self, count: int) -> None:
        self.done += count
        now = self._clock()
        if now - self._last >= self._every and self.done < self.total - self.cached:
            self._last = now
            log.info("%s: prefill %d / %d tokens, %.0f tok/s", self.label, self.done,
                     self.total - self.cached, self.rate())

    def finish(self, *, cancelled: bool = False) -> None:
        elapsed = self._clock() - self._started
        what = "cancelled after" if cancelled else "done:"
        log.info("%s: prefill %s %d tokens in %.1f s, %.0f tok/s", self.label, what,
                 self.done, elapsed, self.rate())
