"""The memory a KV budget may take: a share of the memory available beyond the model's
weights, or a fixed size; and how much memory is available (Linux's MemAvailable, else the
machine's RAM, or what the process's cgroup still allows when that is less). Reading what
is available, not the RAM, lets a second server started beside a first plan within what
the first left.

The budget is an upper bound: the lanes planned from it (kv_cache.py) never hold more
than every slot's whole window, and a share never more than the long lane's whole windows
and short slots of 8,192 tokens, so a small model on a large machine takes only what its
slots are for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# the default KV budget: a quarter of the available memory left once the weights are loaded
DEFAULT_KV_SHARE = 0.25
# A share buys at most the long lane's whole windows and short slots of this many tokens
# each: short requests are the many (a chat turn, a tool call), and what a share would add
# past that only fills memory on a large machine. A budget in MiB is taken as given.
SHARE_SHORT_WINDOW = 8192
_MIB = 1 << 20
# cgroup v2, then v1: the memory limit of the process's group ("max": none), and beside
# each the file of what the group uses
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"),
                  Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
_CGROUP_USAGE = {"memory.max": "memory.current", "memory.limit_in_bytes": "memory.usage_in_bytes"}
_MEMINFO = Path("/proc/meminfo")


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


def meminfo_available(path: Path = _MEMINFO) -> int | None:
    """Linux's estimate of the memory that can be taken without swapping (MemAvailable)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name == "MemAvailable" and rest.split() and rest.split()[0].isdigit():
            return int(rest.split()[0]) * 1024
    return None


def cgroup_room(limits: tuple[Path, ...] = _CGROUP_LIMITS) -> int | None:
    """What this process's cgroup still allows (its limit less its usage), if it has one."""
    for limit_path in limits:
        try:
            limit = limit_path.read_text().strip()
            used = (limit_path.parent / _CGROUP_USAGE[limit_path.name]).read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and used.isdigit():
            return max(int(limit) - int(used), 0)
    return None


def available_memory() -> int:
    """The memory a new model may take: Linux's MemAvailable (else the machine's RAM), or
    what this process's cgroup still allows when that is less."""
    found = [m for m in (meminfo_available() or physical_memory(), cgroup_room()) if m]
    return min(found) if found else 0


@dataclass(frozen=True)
class KvBudget:
    """A KV budget: ``mib`` when given, else ``share`` of the available memory beyond the
    weights."""

    share: float = DEFAULT_KV_SHARE
    mib: int | None = None

    @property
    def short_window_cap(self) -> int | None:
        """The short slots' window past which a share buys nothing more (None: as given)."""
        return None if self.mib is not None else SHARE_SHORT_WINDOW

    def resolve(self, model_bytes: int, memory_bytes: int) -> int:
        """The budget in bytes for a model file of ``model_bytes`` on ``memory_bytes``."""
        if self.mib is not None:
            return self.mib * _MIB
        return int(max(memory_bytes - model_bytes, 0) * self.share)

    def describe(self, model_bytes: int, memory_bytes: int) -> str:
        budget = self.resolve(model_bytes, memory_bytes) / _MIB
        if self.mib is not None:
            return f"kv_memory_mib = {self.mib:,}"
        return (f"kv_memory = \"{self.share:.0%}\" of {memory_bytes / _MIB:,.0f} MiB "
                f"available less the weights' {model_bytes / _MIB:,.0f} MiB = "
                f"{budget:,.0f} MiB")
