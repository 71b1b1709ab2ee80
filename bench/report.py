"""Ratios (ours / peer) against the targets of issue 6, as a Markdown table."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from .scenarios import CONCURRENCY, Results


@dataclass(frozen=True)
class Row:
    metric: str
    ours: str
    peer: str
    ratio: str
    target: str = ""
    met: bool | None = None


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _rate(value: float) -> str:
    return f"{value:.1f} tok/s"


def _row(metric: str, ours: float, peer: float, show: Callable[[float], str],
         target: float | None = None, higher_is_better: bool = True) -> Row:
    ratio = ours / peer if peer else float("nan")
    met = None
    if target is not None:
        met = ratio >= target if higher_is_better else ratio <= target
    sign = ">=" if higher_is_better else "<="
    return Row(metric, show(ours), show(peer), f"{ratio:.2f}x",
               f"{sign} {target}x" if target is not None else "", met)


def rows(ours: Results, peer: Results) -> list[Row]:
    ours_direct, peer_direct = ours.one_token_direct, peer.one_token_direct
    table = [
        _row("single-stream decode", ours.decode_rate, peer.decode_rate, _rate, 0.95),
        _row("time to first token", ours.ttft, peer.ttft, _ms, higher_is_better=False),
    ]
    for n in CONCURRENCY:
        table.append(_row(f"aggregate, {n} streams", ours.aggregate[n], peer.aggregate[n],
                          _rate, 2.0 if n == 8 else None))
    table += [
        _row("2,000-token prefix, cold TTFT", ours.cold_prefix_ttft, peer.cold_prefix_ttft,
             _ms, higher_is_better=False),
        _row("2,000-token prefix, warm TTFT", ours.warm_prefix_ttft, peer.warm_prefix_ttft,
             _ms, higher_is_better=False),
    ]
    warm_ours = ours.warm_prefix_ttft / ours.cold_prefix_ttft
    warm_peer = peer.warm_prefix_ttft / peer.cold_prefix_ttft
    table.append(Row("warm / cold TTFT", f"{warm_ours:.3f}", f"{warm_peer:.3f}",
                     f"{warm_ours / warm_peer:.2f}x", "ours <= 0.2", warm_ours <= 0.2))
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        added_ours = quantile(ours.one_token, q) - quantile(ours_direct, q)
        added_peer = quantile(peer.one_token, q) - quantile(peer_direct, q)
        table.append(Row(f"1-token request, {label}", _ms(quantile(ours.one_token, q)),
                         _ms(quantile(peer.one_token, q)),
                         f"{quantile(ours.one_token, q) / quantile(peer.one_token, q):.2f}x"))
        table.append(Row(f"latency layers add, {label}", _ms(added_ours), _ms(added_peer),
                         f"{added_ours / added_peer:.2f}x" if added_peer > 0 else "-",
                         "ours <= 2 ms" if label == "p50" else "",
                         added_ours <= 0.002 if label == "p50" else None))
    table.append(Row("engine alone, 1 token, p50", _ms(statistics.median(ours_direct)),
                     _ms(statistics.median(peer_direct)), "-"))
    return table


def markdown(table: list[Row]) -> str:
    lines = ["| metric | ours | peer | ours / peer | target | met |",
             "|---|---:|---:|---:|---|---|"]
    for row in table:
        met = "" if row.met is None else ("yes" if row.met else "**no**")
        lines.append(f"| {row.metric} | {row.ours} | {row.peer} | {row.ratio} | "
                     f"{row.target} | {met} |")
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {os.cpu_count()} cores, {memory:.0f} GiB, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"
