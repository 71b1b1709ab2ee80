"""Incremental stop-sequence matching over a stream of text pieces."""

from __future__ import annotations


def partial_suffix(buffer: str, tag: str) -> int:
    """Length of the longest end of ``buffer`` that could begin ``tag`` (shorter than it)."""
    for size in range(min(len(tag) - 1, len(buffer)), 0, -1):
        if buffer.endswith(tag[:size]):
            return size
    return 0


class StopMatcher:
    """Finds stop sequences in streamed text, also when one spans several pieces.

    ``feed`` returns the text that is safe to emit now and the stop sequence that
    matched, if any. Text that could still turn out to be the start of a stop
    sequence is held back until the next piece decides it.
    """

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self._pending = ""

    def feed(self, text: str) -> tuple[str, str | None]:
        buffer = self._pending + text
        if not self.stops:
            self._pending = ""
            return buffer, None
        match = self._earliest(buffer)
        if match is not None:
            index, stop = match
            self._pending = ""
            return buffer[:index], stop
        hold = max((partial_suffix(buffer, stop) for stop in self.stops), default=0)
        self._pending = buffer[len(buffer) - hold:] if hold else ""
        return buffer[: len(buffer) - hold], None

    def flush(self) -> str:
        """The held-back text, once the stream has ended without a match."""
        pending, self._pending = self._pending, ""
        return pending

    def _earliest(self, buffer: str) -> tuple[int, str] | None:
        best: tuple[int, str] | None = None
        for stop in self.stops:
            index = buffer.find(stop)
            if index >= 0 and (best is None or index < best[0]):
                best = (index, stop)
        return best
