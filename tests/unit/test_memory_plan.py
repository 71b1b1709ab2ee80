"""The KV budget sized to the machine: a share of its memory beyond the weights, or MiB;
the planner's figures for a 7B-class model and the 135M default. No model is loaded."""

from __future__ import annotations

import pytest

from b3os_infer.engine.kv_cache import LanePlan, ModelShape, plan_lanes
from b3os_infer.engine.memory_plan import (
    KvBudget,
    available_memory,
    cgroup_room,
    meminfo_available,
    parse_share,
    physical_memory,
)

MIB = 1 << 20
GIB = 1 << 30
# a 7B-class model: 32 layers, 8 KV heads x 128 dims, a 32k window; Q4_K_M is ~4.37 GB
SEVEN_B = ModelShape(layers=32, k_width=8 * 128, v_width=8 * 128)
SEVEN_B_Q4_BYTES = 4_368_438_944
# SmolLM2-135M (Q4_1, 98,362,432 bytes): 30 layers, 3 KV heads of 64, served at 32,768
SMOLLM2 = ModelShape(layers=30, k_width=192, v_width=192)
SMOLLM2_BYTES = 98_362_432


DEFAULT = KvBudget()


def plan_for(shape: ModelShape, model_bytes: int, memory: int, budget: KvBudget = DEFAULT):
    return plan_lanes(32768, 8, 2, budget.resolve(model_bytes, memory),
                      shape.bytes_per_token("f16"), budget.short_window_cap)


def test_a_share_is_written_as_a_percentage_and_anything_else_is_refused():
    assert parse_share("25%") == 0.25
    assert parse_share(" 12.5% ") == 0.125
    for bad in ("25", "0%", "101%", "a%", "-5%"):
        with pytest.raises(ValueError, match=bad.strip()):
            parse_share(bad)


def test_the_default_budget_is_a_quarter_of_the_memory_beyond_the_weights():
    assert KvBudget().resolve(4 * GIB, 16 * GIB) == 3 * GIB
    assert KvBudget(share=0.5).resolve(2 * GIB, 10 * GIB) == 4 * GIB
    assert KvBudget().resolve(20 * GIB, 16 * GIB) == 0   # weights beyond memory: nothing
    assert KvBudget(mib=2560).resolve(4 * GIB, 16 * GIB) == 2560 * MIB   # MiB: as given


def test_a_7b_q4_model_with_16_gib_available_gets_one_slot_of_a_24k_window_not_a_refusal():
    assert SEVEN_B.bytes_per_token("f16") == 128 * 1024
    budget = KvBudget().resolve(SEVEN_B_Q4_BYTES, 16 * GIB)
    assert budget // MIB == 3054
    plan = plan_for(SEVEN_B, SEVEN_B_Q4_BYTES, 16 * GIB)
    assert plan.lanes == (LanePlan(1, 24320),)
    assert plan.window == 24320 and plan.bytes() // MIB == 3040
    # a 16 GB machine with its desktop running has about 14 GiB available: still 20k
    assert plan_for(SEVEN_B, SEVEN_B_Q4_BYTES, 14 * GIB).lanes == (LanePlan(1, 20224),)
    # with a third of the memory it holds the whole 32k window
    roomy = plan_for(SEVEN_B, SEVEN_B_Q4_BYTES, 16 * GIB, KvBudget(share=0.34))
    assert roomy.lanes == (LanePlan(1, 32768),)


def test_the_135m_default_with_16_gib_available_keeps_two_whole_windows_and_8_short_ones():
    plan = plan_for(SMOLLM2, SMOLLM2_BYTES, 16 * GIB)   # a 4,072 MiB share
    assert plan.lanes == (LanePlan(8, 8192), LanePlan(2, 32768))
    assert plan.bytes() // MIB == 2880


def test_a_share_buys_the_135m_default_no_more_than_its_long_and_short_slots_are_for():
    plan = plan_for(SMOLLM2, SMOLLM2_BYTES, 64 * GIB)   # a 16 GiB share
    assert plan.lanes == (LanePlan(8, 8192), LanePlan(2, 32768))
    assert plan.bytes() == (8 * 8192 + 2 * 32768) * 23040 == 2880 * MIB


def test_a_budget_in_mib_is_taken_as_given_up_to_every_slots_whole_window():
    plan = plan_for(SMOLLM2, SMOLLM2_BYTES, 64 * GIB, KvBudget(mib=16384))
    assert plan.lanes == (LanePlan(8, 32768),)
    assert plan.bytes() == 8 * 32768 * 23040 == 5760 * MIB


def test_the_135m_default_with_4_gib_available_takes_under_1_gib():
    plan = plan_for(SMOLLM2, SMOLLM2_BYTES, 4 * GIB)
    assert plan.lanes == (LanePlan(6, 2048), LanePlan(1, 32768))
    assert plan.bytes() // MIB == 990


def test_the_cgroup_room_is_its_limit_less_its_usage_and_max_means_none(tmp_path):
    limited, unlimited = tmp_path / "v2", tmp_path / "v1"
    limited.mkdir()
    unlimited.mkdir()
    (limited / "memory.max").write_text("2147483648\n")
    (limited / "memory.current").write_text("536870912\n")
    (unlimited / "memory.limit_in_bytes").write_text("max\n")
    (unlimited / "memory.usage_in_bytes").write_text("1024\n")
    assert cgroup_room((tmp_path / "missing" / "memory.max", limited / "memory.max")) == (
        3 * GIB // 2)
    assert cgroup_room((unlimited / "memory.limit_in_bytes",)) is None


def test_memavailable_is_read_from_meminfo_in_kib(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683520 kB\nMemFree:        19438592 kB\n"
                       "MemAvailable:   23253216 kB\nBuffers:            2048 kB\n")
    assert meminfo_available(meminfo) == 23253216 * 1024
    assert meminfo_available(tmp_path / "missing") is None


def test_the_available_memory_is_above_zero_and_at_most_the_ram():
    assert 0 < available_memory() <= physical_memory()
