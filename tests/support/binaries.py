"""Server binaries shipped inside Python packages that ``make install`` puts in the venv."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def package_dir(package: str) -> Path:
    """The directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"the package {package!r} is not installed: `make install` installs it "
                    "(a dev dependency in pyproject.toml)")
    return Path(next(iter(spec.submodule_search_locations)))


def package_binary(package: str, relative: str) -> Path:
    """An executable inside an installed package; fails the test when it is missing."""
    binary = package_dir(package) / relative
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: reinstall {package!r} with `make install`")
    return binary
