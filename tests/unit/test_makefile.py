"""`make serve`'s command line, read with `make -n` (nothing is run): HOST and PORT are
passed on only when given, so a config's [server] host and port apply otherwise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def serve_line(*variables: str) -> str:
    """The last line `make -n serve` prints: the `b3os-infer serve` command."""
    shown = subprocess.run(["make", "-n", "-s", "-C", str(ROOT), "serve", *variables],
                           capture_output=True, text=True, check=True, timeout=30)
    return shown.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_serve_passes_host_and_port_only_when_they_are_given():
    plain = serve_line('ARGS=--config b3os.toml')
    assert plain.split() == [".venv/bin/b3os-infer", "serve", "--config", "b3os.toml"]
    given = serve_line("HOST=0.0.0.0", "PORT=9000")
    assert given.split() == [".venv/bin/b3os-infer", "serve", "--host", "0.0.0.0",
                             "--port", "9000"]
