"""The benchmark's arithmetic: ratios, quantiles and targets (no servers)."""

from __future__ import annotations

from bench.agent import Reply
from bench.report import agent_rows, decode_rows, markdown, memory_row, quantile, rows
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


def reply(ttft: float, prompt: int, cached: int) -> Reply:
    return Reply(ttft=ttft, total=ttft + 1, computed_tokens=prompt - cached,
                 cached_tokens=cached)


def test_agent_rows_compare_cold_to_llama_server_and_reuse_to_our_cold():
    ours = {"cold": reply(300.0, 17360, 0), "new conversation": reply(6.0, 17370, 17000),
            "after restart": reply(30.0, 17365, 17000)}
    peer = {"cold": reply(290.0, 17389, 0), "new conversation": reply(3.0, 17399, 17300),
            "after restart": reply(290.0, 17394, 0)}
    table = {row.metric: row for row in agent_rows(ours, peer)}
    cold = table["agent, cold: time to first token"]
    assert (cold.ours, cold.peer, cold.ratio, cold.met) == ("300.00 s", "290.00 s", "1.03x",
                                                            True)
    assert table["agent, cold: prompt tokens"].ours == "17360 (0 cached)"
    new = table["agent, new conversation / cold"]
    assert (new.ours, new.peer, new.met) == ("0.020", "0.010", True)
    restart = table["agent, after restart / cold"]
    assert (restart.ours, restart.peer, restart.met) == ("0.100", "1.000", False)
    assert table["agent, after restart: prompt tokens"].peer == "17394 (0 cached)"


def test_agent_rows_without_the_peer_still_judge_our_reuse():
    ours = {"cold": reply(900.0, 17360, 0), "new conversation": reply(0.5, 17370, 17000),
            "after restart": reply(900.0, 17365, 0)}
    table = {row.metric: row for row in agent_rows(ours, {})}
    assert table["agent, cold: time to first token"].met is None
    assert table["agent, new conversation / cold"].met is True
    assert table["agent, after restart / cold"].met is False


def test_decode_rows_hold_ours_to_llama_server_with_as_many_slots():
    ours = results(100.0, 150.0, 1.0, 0.1, [], [])
    peer = results(110.0, 140.0, 1.0, 0.1, [], [])
    single, eight = decode_rows(ours, peer)
    assert (single.ratio, single.target, single.met) == ("0.91x", ">= 0.95x", False)
    assert (eight.ratio, eight.target, eight.met) == ("1.07x", ">= 1.0x", True)


def test_memory_row_states_the_peak_against_the_target():
    assert memory_row(3_100_000_000).met is True
    over = memory_row(3_400_000_000)
    assert (over.ours, over.met) == ("3.40 GB", False)


def test_agent_rows_leave_out_a_step_that_was_not_run():
    ours = {"cold": reply(900.0, 17360, 0), "new conversation": reply(0.5, 17370, 17000)}
    metrics = [row.metric for row in agent_rows(ours, {"cold": reply(290.0, 17389, 0)})]
    assert "agent, new conversation / cold" in metrics
    assert not any("after restart" in metric for metric in metrics)
