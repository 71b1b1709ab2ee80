"""How far llama.cpp has read a model's weights, in the log: a line per quarter."""

from __future__ import annotations

import logging
from typing import Any

import llama_cpp as ll

log = logging.getLogger(__name__)


class LoadProgress:
    """A progress callback for llama.cpp's model parameters; keep it while the load runs
    (llama.cpp holds only a C pointer to it)."""

    def __init__(self, name: str, step: float = 0.25) -> None:
        self.name = name
        self.step = step
        self._next = step
        self.callback = ll.llama_progress_callback(self._seen)

    def attach(self, params: Any) -> None:
        params.progress_callback = self.callback
        params.progress_callback_user_data = None

    def _seen(self, progress: float, _: Any) -> bool:
        while progress + 1e-9 >= self._next and self._next <= 1.0:
            log.info("loading %s: %d%% of its weights read", self.name, round(self._next * 100))
            self._next += self.step
        return True    # go on loading
