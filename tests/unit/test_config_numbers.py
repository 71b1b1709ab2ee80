"""Float keys of the config file take a whole number as well, and still refuse a bool."""

from __future__ import annotations

import pytest

from b3os_infer.config import ConfigError, load_config


def test_a_whole_number_of_check_seconds_is_taken_as_seconds(tmp_path):
    path = tmp_path / "b3os.toml"
    path.write_text("[batches]\ncheck_seconds = 1\n")
    assert load_config(path).batches.check_seconds == 1


def test_a_bool_for_a_float_key_is_refused_with_the_table_and_key_named(tmp_path):
    path = tmp_path / "b3os.toml"
    path.write_text("[edge]\nbalance_rel_threshold = true\n")
    with pytest.raises(ConfigError, match=r"b3os.toml \[edge\]: balance_rel_threshold"):
        load_config(path)
