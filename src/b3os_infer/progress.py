"""A byte-count progress bar for long copies, on a terminal or as plain lines in a log."""

from __future__ import annotations

from typing import TextIO

_WIDTH = 30
_MB = 1_000_000


class ProgressBar:
    """``label [#####.....] 123.4 / 491.4 MB  25%``: redrawn in place on a terminal, else
    printed as a line at every tenth of the way."""

    def __init__(self, label: str, stream: TextIO) -> None:
        self.label = label
        self.stream = stream
        self.tty = stream.isatty()
        self._shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        step = percent if self.tty else percent - percent % 10
        if step == self._shown:
            return
        self._shown = step
        end = "\n" if not self.tty or done >= total else ""
        self.stream.write(("\r" if self.tty else "") + self.line(done, total) + end)
        self.stream.flush()

    def line(self, done: int, total: int) -> str:
        filled = _WIDTH * done // total if total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        percent = 100 * done // total if total else 100
        return f"{self.label} [{bar}] {done / _MB:.1f} / {total / _MB:.1f} MB {percent:3d}%"
