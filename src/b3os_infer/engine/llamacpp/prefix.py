"""Shared prompt prefixes: how many leading tokens two token sequences have in common."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Tokens = Sequence[int] | npt.NDArray[np.int32]


def token_array(tokens: Tokens) -> npt.NDArray[np.int32]:
    """The tokens as an int32 array (no copy when they already are one): convert a prompt
    once, then compare it with many sequences."""
    return np.asarray(tokens, dtype=np.int32)


def common_prefix(mine: Tokens, theirs: Tokens) -> int:
    """How many leading tokens the two sequences share (vectorised: prompts of agents run
    to tens of thousands of tokens, compared with every slot at each admission)."""
    n = min(len(mine), len(theirs))
    if n == 0:
        return 0
    differ = np.flatnonzero(token_array(mine[:n]) != token_array(theirs[:n]))
    return int(differ[0]) if differ.size else n
