"""Shared prompt prefixes: how many leading tokens two token sequences have in common."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def common_prefix(mine: Sequence[int], theirs: Sequence[int]) -> int:
    """How many leading tokens the two sequences share (vectorised: prompts of agents run
    to tens of thousands of tokens, compared with every slot at each admission)."""
    n = min(len(mine), len(theirs))
    if n == 0:
        return 0
    a = np.asarray(mine[:n], dtype=np.int64)
    b = np.asarray(theirs[:n], dtype=np.int64)
    differ = np.flatnonzero(a != b)
    return int(differ[0]) if differ.size else n
