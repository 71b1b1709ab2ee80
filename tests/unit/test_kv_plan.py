"""How a KV memory budget becomes lanes, and the [engine] settings that size it: no model."""

from __future__ import annotations

import pytest

from b3os_infer.config import ConfigError, load_config
from b3os_infer.engine.kv_cache import (
    KvBudgetTooSmall,
    LanePlan,
    ModelShape,
    plan_lanes,
)

MIB = 1 << 20
# SmolLM2-135M: 30 layers, 3 KV heads of 64
SMOLLM2 = ModelShape(layers=30, k_width=192, v_width=192)
# Qwen2.5-Coder-0.5B: 24 layers, 2 KV heads of 64
QWEN_05B = ModelShape(layers=24, k_width=128, v_width=128)


def test_bytes_per_token_count_k_and_v_of_every_layer_at_the_kv_precision():
    assert SMOLLM2.bytes_per_token("f16") == 30 * 384 * 2 == 23_040
    assert QWEN_05B.bytes_per_token("f16") == 12_288
    assert SMOLLM2.bytes_per_token("q8_0") == 30 * 384 * 34 // 32


def test_a_budget_holding_full_windows_for_every_slot_gives_one_lane():
    plan = plan_lanes(4096, 8, 2, 2560 * MIB, SMOLLM2.bytes_per_token("f16"))
    assert plan.lanes == (LanePlan(8, 4096),)


def test_the_default_budget_splits_into_a_short_lane_and_two_whole_windows():
    per_token = SMOLLM2.bytes_per_token("f16")
    plan = plan_lanes(32768, 8, 2, 2560 * MIB, per_token)
    short, long = plan.lanes
    assert long == LanePlan(2, 32768)
    assert short.slots == 8 and short.window % 256 == 0
    assert plan.bytes() <= 2560 * MIB
    # the next multiple of 256 would not fit
    assert (2 * 32768 + 8 * (short.window + 256)) * per_token > 2560 * MIB


def test_a_model_with_a_thinner_kv_gets_a_longer_short_lane_from_the_same_budget():
    thin = plan_lanes(32768, 8, 2, 2560 * MIB, QWEN_05B.bytes_per_token("f16"))
    fat = plan_lanes(32768, 8, 2, 2560 * MIB, SMOLLM2.bytes_per_token("f16"))
    assert thin.lanes[0].window > 3 * fat.lanes[0].window


def test_a_budget_too_small_for_the_long_lane_keeps_the_window_with_fewer_slots():
    per_token = SMOLLM2.bytes_per_token("f16")
    # 1,000 MiB: one whole 32,768-token window (720 MiB) and six short slots of 2,048
    plan = plan_lanes(32768, 8, 2, 1000 * MIB, per_token)
    assert plan.lanes == (LanePlan(6, 2048), LanePlan(1, 32768))
    assert plan.window == 32768 and plan.slots == 7
    # 740 MiB: the whole window and too little beside it for a short slot
    assert plan_lanes(32768, 8, 2, 740 * MIB, per_token).lanes == (LanePlan(1, 32768),)


def test_a_budget_below_one_whole_window_serves_one_slot_of_a_shorter_window():
    plan = plan_lanes(32768, 8, 2, 512 * MIB, SMOLLM2.bytes_per_token("f16"))
    assert plan.lanes == (LanePlan(1, 23296),)
    assert plan.window == 23296


def test_a_budget_below_one_slot_of_2048_tokens_is_refused_with_what_it_needs():
    with pytest.raises(KvBudgetTooSmall, match=r"cannot hold one slot of 2,048 tokens .* "
                                               r"at least 45 MiB; raise kv_memory"):
        plan_lanes(32768, 8, 2, 40 * MIB, SMOLLM2.bytes_per_token("f16"))


def test_without_long_slots_the_budget_holds_as_many_whole_windows_as_fit():
    assert plan_lanes(32768, 8, 0, 2560 * MIB, SMOLLM2.bytes_per_token("f16")).lanes == (
        LanePlan(3, 32768),)
    assert plan_lanes(32768, 8, 0, 5760 * MIB, SMOLLM2.bytes_per_token("f16")).lanes == (
        LanePlan(8, 32768),)


def test_engine_settings_out_of_range_are_refused_when_the_config_is_read(tmp_path):
    path = tmp_path / "b3os.toml"
    path.write_text('[engine]\nkv_type = "q4_0"\n')
    with pytest.raises(ConfigError, match=r"\[engine\]: kv_type should be one of f16, q8_0"):
        load_config(path)
    path.write_text("[engine]\nkv_memory_mib = 0\n")
    with pytest.raises(ConfigError, match=r"kv_memory_mib should be an integer >= 16"):
        load_config(path)
    path.write_text("[engine]\nlong_slots = 1\nkv_memory_mib = 4000\nprefix_cache_mib = 0\n")
    engine = load_config(path).engine
    assert (engine.long_slots, engine.kv_memory_mib, engine.prefix_cache_mib) == (1, 4000, 0)
