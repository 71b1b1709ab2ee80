"""Server binaries: those shipped inside Python packages that ``make install`` puts in the
venv, and llama.cpp's ``llama-server`` that ``make llama-server`` builds once."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
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


def llama_server() -> Path:
    """llama.cpp's server, built from the llama.cpp that the installed llama-cpp-python
    vendors (``$LLAMA_SERVER`` when set, as the Makefile sets it)."""
    version = importlib.metadata.version("llama-cpp-python")
    default = Path.home() / ".cache" / "b3os-infer" / f"llama-server-{version}" / "llama-server"
    binary = Path(os.environ.get("LLAMA_SERVER") or default)
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: `make llama-server` builds it (minutes, once)")
    return binary
