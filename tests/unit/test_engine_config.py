"""The [engine] table: the pool and disk-cache settings are read, and bad values refused."""

from __future__ import annotations

import re

import pytest

from b3os_infer.config import ConfigError, EngineConfig, load_config
from b3os_infer.engine.kv_cache import DEFAULT_POOL_TOKENS


def test_the_defaults_are_an_f16_pool_and_a_disk_cache():
    engine = EngineConfig()
    assert (engine.kv_type, engine.pool_tokens) == ("f16", DEFAULT_POOL_TOKENS)
    assert engine.disk_cache_bytes > 0 and engine.disk_cache_min_tokens > 0


def test_pool_and_disk_cache_settings_are_read(tmp_path):
    path = tmp_path / "b3os.toml"
    path.write_text('[engine]\npool_tokens = 16384\ncached_prefixes = 4\nkv_type = "q8_0"\n'
                    "disk_cache_bytes = 0\ndisk_cache_min_tokens = 512\n")
    engine = load_config(path).engine
    assert (engine.pool_tokens, engine.cached_prefixes, engine.kv_type) == (16384, 4, "q8_0")
    assert (engine.disk_cache_bytes, engine.disk_cache_min_tokens) == (0, 512)


@pytest.mark.parametrize(("line", "message"), [
    ('kv_type = "q4_0"', "kv_type should be one of f16, q8_0"),
    ("pool_tokens = 100", "pool_tokens should be at least 256"),
    ("cached_prefixes = -1", "cached_prefixes should be at least 0"),
    ("parallel = 200\ncached_prefixes = 100", "parallel + cached_prefixes should be at most 256"),
])
def test_bad_engine_values_are_refused_with_the_key_named(tmp_path, line, message):
    path = tmp_path / "b3os.toml"
    path.write_text(f"[engine]\n{line}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path)
