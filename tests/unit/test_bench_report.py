"""The benchmark's arithmetic: ratios, quantiles and targets (no servers)."""

from __future__ import annotations

from bench.report import markdown, quantile, rows
from bench.scenarios import Results


def results(rate: float, aggregate: float, cold: float, warm: float,
            one_token: list[float], direct: list[float]) -> Results:
    return Results(decode_rate=rate, ttft=0.1, aggregate=dict.fromkeys((1, 4, 8, 16), aggregate),
                   cold_prefix_ttft=cold, warm_prefix_ttft=warm, one_token=one_token,
                   one_token_direct=direct)


def test_quantile_picks_from_the_sorted_samples():
    samples = [float(v) for v in range(100, 0, -1)]
    assert quantile(samples, 0.5) == 51.0
    assert quantile(samples, 0.99) == 100.0


def test_rows_compare_ours_to_the_peer_against_the_targets():
    ours = results(100.0, 120.0, 10.0, 1.0, [0.012] * 10, [0.009] * 10)
    peer = results(110.0, 50.0, 8.0, 0.5, [0.006] * 10, [0.002] * 10)
    table = {row.metric: row for row in rows(ours, peer)}
    assert (table["single-stream decode"].ratio, table["single-stream decode"].met) == \
        ("0.91x", False)
    assert (table["aggregate, 8 streams"].ratio, table["aggregate, 8 streams"].met) == \
        ("2.40x", True)
    assert table["warm / cold TTFT"].ours == "0.100" and table["warm / cold TTFT"].met
    added = table["latency layers add, p50"]
    assert (added.ours, added.peer, added.met) == ("3.0 ms", "4.0 ms", False)
    assert "| aggregate, 8 streams | 120.0 tok/s | 50.0 tok/s | 2.40x | >= 2.0x | yes |" in \
        markdown(list(table.values()))
