"""Every test carries a time bound (pytest-timeout), set by its tier unless it sets its own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.tiers import TIMEOUT_S


def test_a_unit_test_gets_the_unit_tiers_bound(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args == (TIMEOUT_S["unit"],)


@pytest.mark.timeout(7)
def test_a_tests_own_bound_wins_over_its_tiers(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args == (7,)


def test_a_test_past_its_bound_fails(tmp_path: Path) -> None:
    (tmp_path / "test_sleeper.py").write_text(
        "import time\nimport pytest\n\n"
        "@pytest.mark.timeout(1)\ndef test_sleeps():\n    time.sleep(30)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_sleeper.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1, done.stdout
    assert "1 failed" in done.stdout and "Timeout" in done.stdout
    assert time.monotonic() - started < 20
