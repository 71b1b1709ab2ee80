"""The [engine] keys of the KV budget and the accelerators, as the config file gives them:
what is taken, and what is refused with the key named."""

from __future__ import annotations

import pytest

from b3os_infer.config import ConfigError, EngineConfig, kv_budget, load_config
from b3os_infer.engine.memory_plan import DEFAULT_KV_SHARE, KvBudget


def engine_from(tmp_path, text: str) -> EngineConfig:
    path = tmp_path / "b3os.toml"
    path.write_text("[engine]\n" + text)
    return load_config(path).engine


def refused(tmp_path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        engine_from(tmp_path, text)


def test_the_budget_defaults_to_a_quarter_and_takes_a_share_or_mib(tmp_path):
    assert DEFAULT_KV_SHARE == 0.25
    assert kv_budget(EngineConfig()) == KvBudget(share=0.25)
    assert kv_budget(engine_from(tmp_path, 'kv_memory = "40%"\n')) == KvBudget(share=0.4)
    assert kv_budget(engine_from(tmp_path, "kv_memory_mib = 2560\n")) == KvBudget(mib=2560)


def test_a_bad_budget_is_refused_with_the_key_named(tmp_path):
    refused(tmp_path, 'kv_memory = "25"\n', r"\[engine\]: kv_memory '25' is not a share")
    refused(tmp_path, 'kv_memory = "150%"\n', r"kv_memory '150%' should be above 0% and at "
                                               "most 100%")
    refused(tmp_path, "kv_memory = 25\n", r"kv_memory should be a share of memory such as")
    refused(tmp_path, 'kv_memory_mib = "2560"\n', r"kv_memory_mib should be an integer >= 16")
    refused(tmp_path, 'kv_memory = "25%"\nkv_memory_mib = 2560\n',
            "use either kv_memory or kv_memory_mib, not both")


def test_accelerator_settings_are_taken_as_given(tmp_path):
    engine = engine_from(tmp_path, "gpu_layers = 20\ntensor_split = [3, 1.5]\n")
    assert (engine.gpu_layers, engine.main_gpu, engine.tensor_split) == (20, None, [3, 1.5])
    assert engine_from(tmp_path, "main_gpu = 1\n").main_gpu == 1
    defaults = EngineConfig()
    assert (defaults.gpu_layers, defaults.main_gpu, defaults.tensor_split) == (None, None, [])


def test_wrong_accelerator_settings_are_refused_with_the_key_named(tmp_path):
    refused(tmp_path, "gpu_layers = -1\n", r"gpu_layers should be an integer >= 0")
    refused(tmp_path, "gpu_layers = true\n", r"gpu_layers should be an integer >= 0")
    refused(tmp_path, 'gpu_layers = "all"\n', r"gpu_layers should be an integer >= 0")
    refused(tmp_path, "main_gpu = 0.5\n", r"main_gpu should be an integer >= 0")
    refused(tmp_path, 'tensor_split = "3,1"\n', r"tensor_split should be a list of numbers")
    refused(tmp_path, "tensor_split = [3, -1]\n", r"tensor_split should be a list of numbers")
    refused(tmp_path, "tensor_split = [0, 0]\n", r"tensor_split should be a list of numbers")
    refused(tmp_path, 'tensor_split = ["a"]\n', r"tensor_split should be a list of numbers")
    refused(tmp_path, "main_gpu = 0\ntensor_split = [1, 1]\n",
            "use either main_gpu .* or tensor_split")


def test_an_unknown_engine_key_is_refused_with_its_name(tmp_path):
    refused(tmp_path, "n_gpu_layers = 10\n", r"\[engine\]: unknown key 'n_gpu_layers'")


def test_flash_attention_takes_auto_on_or_off(tmp_path):
    assert EngineConfig().flash_attention == "auto"
    assert engine_from(tmp_path, 'flash_attention = "off"\n').flash_attention == "off"
    refused(tmp_path, 'flash_attention = "yes"\n',
            r"flash_attention should be one of auto, on, off")


def test_flash_attention_off_with_a_quantized_kv_is_refused(tmp_path):
    refused(tmp_path, 'flash_attention = "off"\nkv_type = "q8_0"\n',
            r'kv_type = "q8_0" needs flash attention')
    assert engine_from(tmp_path, 'kv_type = "q8_0"\n').flash_attention == "auto"
