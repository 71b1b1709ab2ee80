"""The memory a KV budget may take: a share of the machine's memory beyond the model's
weights, or a fixed size; and how much memory the machine has (its RAM, or the limit of the
cgroup the process runs in when that is lower).

The budget is an upper bound: the lanes planned from it (kv_cache.py) never hold more
than every slot's whole window, so a small model on a large machine takes only what its
slots can use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# the default KV budget: a quarter of the memory left once the model's weights are loaded
DEFAULT_KV_SHARE = 0.25
_MIB = 1 << 20
# cgroup v2, then v1: the memory limit of the process's group ("max": none)
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"),
                  Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def parse_share(text: str) -> float:
    """``"25%"`` -> 0.25; a share above 0 and at most 100 %, else ValueError."""
    number = text.strip().removesuffix("%")
    if not text.strip().endswith("%"):
        raise ValueError(f"{text!r} is not a share such as \"25%\"")
    try:
        share = float(number) / 100
    except ValueError:
        raise ValueError(f"{text!r} is not a share such as \"25%\"") from None
    if not 0 < share <= 1:
        raise ValueError(f"{text!r} should be above 0% and at most 100%")
    return share


def physical_memory() -> int:
    """The machine's RAM in bytes (POSIX sysconf; 0 where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def cgroup_limit(paths: tuple[Path, ...] = _CGROUP_LIMITS) -> int | None:
    """The memory limit of this process's cgroup, if one is set and readable."""
    for path in paths:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return int(text)
    return None


def machine_memory() -> int:
    """The memory this process may use: the machine's RAM, or its cgroup's limit when lower."""
    total = physical_memory()
    limit = cgroup_limit()
    if limit is not None and (total == 0 or limit < total):
        return limit
    return total


@dataclass(frozen=True)
class KvBudget:
    """A KV budget: ``mib`` when given, else ``share`` of the memory beyond the weights."""

    share: float = DEFAULT_KV_SHARE
    mib: int | None = None

    def resolve(self, model_bytes: int, memory_bytes: int) -> int:
        """The budget in bytes for a model file of ``model_bytes`` on ``memory_bytes``."""
        if self.mib is not None:
            return self.mib * _MIB
        return int(max(memory_bytes - model_bytes, 0) * self.share)

    def describe(self, model_bytes: int, memory_bytes: int) -> str:
        budget = self.resolve(model_bytes, memory_bytes) / _MIB
        if self.mib is not None:
            return f"kv_memory_mib = {self.mib:,}"
        return (f"kv_memory = \"{self.share:.0%}\" of {memory_bytes / _MIB:,.0f} MiB less the "
                f"weights' {model_bytes / _MIB:,.0f} MiB = {budget:,.0f} MiB")
