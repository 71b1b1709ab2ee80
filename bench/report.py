"""Ratios (ours / peer) against the targets of issues 6 and 13, as Markdown tables."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from . import depth, edit
from .agent import Reply
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


def decode_rows(ours: Results, peer: Results) -> list[Row]:
    """Decode against llama-server with as many slots as ours, at the same window."""
    return [
        _row("single-stream decode", ours.decode_rate, peer.decode_rate, _rate, 0.95),
        _row("aggregate, 8 streams", ours.aggregate[8], peer.aggregate[8], _rate, 1.0),
    ]


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def _tokens(reply: Reply | None) -> str:
    return "-" if reply is None else f"{reply.prompt_tokens} ({reply.cached_tokens} cached)"


AGENT_COLD_TARGET = 1.05     # ours / llama-server, cold
AGENT_REUSE_TARGET = 0.05    # ours, this step / cold


def agent_rows(ours: dict[str, Reply], peer: dict[str, Reply]) -> list[Row]:
    """Claude Code's first request: cold against llama-server; the later steps against our
    own cold time."""
    cold, peer_cold = ours["cold"], peer.get("cold")
    table = [Row("agent, cold: time to first token", _s(cold.ttft),
                 _s(peer_cold.ttft) if peer_cold else "-",
                 f"{cold.ttft / peer_cold.ttft:.2f}x" if peer_cold else "-",
                 f"<= {AGENT_COLD_TARGET}x",
                 cold.ttft / peer_cold.ttft <= AGENT_COLD_TARGET if peer_cold else None),
             Row("agent, cold: prompt tokens", _tokens(cold), _tokens(peer_cold), "-")]
    for step in ("new conversation", "after restart"):
        if step not in ours:
            continue
        mine, theirs = ours[step], peer.get(step)
        share = mine.ttft / cold.ttft
        theirs_share = theirs.ttft / peer_cold.ttft if theirs and peer_cold else None
        table += [
            Row(f"agent, {step}: time to first token", _s(mine.ttft),
                _s(theirs.ttft) if theirs else "-",
                f"{mine.ttft / theirs.ttft:.2f}x" if theirs else "-"),
            Row(f"agent, {step} / cold", f"{share:.3f}",
                f"{theirs_share:.3f}" if theirs_share is not None else "-", "-",
                f"ours <= {AGENT_REUSE_TARGET}", share <= AGENT_REUSE_TARGET),
            Row(f"agent, {step}: prompt tokens", _tokens(mine), _tokens(theirs), "-"),
        ]
    return table


EDIT_PLAIN_TARGET = 2.5   # ours / llama-server without speculation, one stream
EDIT_BEST_TARGET = 1.1    # ours / llama-server with its best --spec-type
DEPTH_TARGET = 1.0


def _edit_rate(measured: edit.Measured, together: bool) -> float | None:
    """The phase's decode rate, or None when a reply of it failed the check."""
    replies = measured.together if together else measured.single
    if not all(r.whole for r in replies):
        return None
    return measured.together_rate if together else measured.single_rate


def best_spec(peers: dict[str, edit.Measured], together: bool) -> str | None:
    """The fastest llama-server variant with speculation whose replies all passed."""
    rated = {name: _edit_rate(m, together) for name, m in peers.items() if name != "none"}
    passed = {name: rate for name, rate in rated.items() if rate is not None}
    return max(passed, key=lambda name: passed[name]) if passed else None


def _edit_row(metric: str, ours: edit.Measured, peer: edit.Measured | None, together: bool,
              target: float | None) -> Row:
    mine = _edit_rate(ours, together)
    theirs = _edit_rate(peer, together) if peer is not None else None
    shown = _rate(mine) if mine is not None else "failed the check"
    if theirs is None:
        return Row(metric, shown, "-", "-", f">= {target}x" if target else "", None)
    if mine is None:
        return Row(metric, shown, _rate(theirs), "-", f">= {target}x" if target else "",
                   False if target else None)
    return _row(metric, mine, theirs, _rate, target)


def edit_rows(ours: edit.Measured, peers: dict[str, edit.Measured], streams: int) -> list[Row]:
    """Ours against llama-server without speculation (``peers["none"]``) and with its
    best ``--spec-type``, one stream and ``streams`` together; then the checks."""
    table: list[Row] = []
    for together, phase in ((False, "1 stream"), (True, f"{streams} streams")):
        best = best_spec(peers, together)
        table.append(_edit_row(f"edit, {phase}: decode vs no speculation", ours,
                               peers.get("none"), together,
                               None if together else EDIT_PLAIN_TARGET))
        table.append(_edit_row(f"edit, {phase}: decode vs best --spec-type "
                               f"({best or 'none passed'})", ours,
                               peers[best] if best else None, together, EDIT_BEST_TARGET))
    checks = ", ".join(f"{name} {m.whole(m.single + m.together)}"
                       for name, m in peers.items())
    table.append(Row("edit: replies whole with the change", ours.whole(ours.single +
                                                                         ours.together),
                     checks, "-"))
    return table


def edit_details(title: str, measured: dict[str, edit.Measured], streams: int) -> str:
    """Every server variant's figures: rates, checks, draft acceptance."""
    lines = [f"{title}\n",
             f"| server | 1 stream | {streams} streams | replies whole | reply tokens | "
             "drafts accepted | failures |", "|---|---:|---:|---|---|---|---|"]
    for name, m in measured.items():
        tokens = "/".join(str(r.tokens) for r in m.single + m.together)
        lines.append(f"| {name} | {_rate(m.single_rate)} | {_rate(m.together_rate)} | "
                     f"{m.whole(m.single)} + {m.whole(m.together)} | {tokens} | "
                     f"{m.acceptance()} | {'; '.join(m.failures()) or '-'} |")
    return "\n".join(lines)


def depth_rows(ours: depth.Measured, peer: depth.Measured) -> list[Row]:
    table = [_row(f"decode at depth ({ours.depth} / {peer.depth} prompt tokens), "
                  f"{depth.TOKENS} tokens", ours.decode_rate, peer.decode_rate, _rate,
                  DEPTH_TARGET),
             Row(f"replies of {depth.TOKENS} tokens",
                 f"{sum(r.output_tokens == depth.TOKENS for r in ours.replies)}"
                 f"/{len(ours.replies)}",
                 f"{sum(r.output_tokens == depth.TOKENS for r in peer.replies)}"
                 f"/{len(peer.replies)}", "-")]
    table.append(_row("depth, cold: time to first token", ours.replies[0].ttft,
                      peer.replies[0].ttft, _s, higher_is_better=False))
    table.append(_row("depth, prefix cached: time to first token",
                      statistics.median(r.ttft for r in ours.replies[1:]),
                      statistics.median(r.ttft for r in peer.replies[1:]), _s,
                      higher_is_better=False))
    return table


MEMORY_TARGET_GB = 3.3


def memory_row(peak_bytes: int) -> Row:
    """Our server's peak resident memory, as ``make serve`` runs it (no peer to match)."""
    gigabytes = peak_bytes / 1e9
    return Row("resident memory, peak", f"{gigabytes:.2f} GB", "-", "-",
               f"ours <= {MEMORY_TARGET_GB} GB", gigabytes <= MEMORY_TARGET_GB)


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
