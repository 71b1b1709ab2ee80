"""Codex CLI's model metadata for the models a server lists: a model catalog file, which
Codex reads from its ``model_catalog_json`` setting (a JSON ``{"models": [...]}``).

Codex ships metadata for OpenAI's models only; for any other model it prints "Model metadata
for `…` not found. Defaulting to fallback metadata; this can degrade performance and cause
issues." at every start. A catalog entry per chat model tells it what the server knows: the
window, and whether the model reads images. Everything else is what Codex's fallback uses
(the shell tool, no apply_patch tool, tool output cut at 10,000 bytes, no reasoning effort
asked for), so Codex sends the requests it sent before, with one difference: an entry must
carry the instructions Codex sends first (Codex refuses a catalog without them), and these are
``INSTRUCTIONS``, written for a model Codex was not tuned for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

INSTRUCTIONS = """\
You are a coding agent working in the user's terminal, in the directory Codex names in the \
environment context. Do what the user asks, using the tools you are given: run shell commands \
with `exec_command` to read files, search, edit, build and test, and read their output before \
you go on. Keep going until the task is done, then answer briefly with what you did and what \
you found. Never claim a result you did not see in a tool's output; if a command fails, read \
the error and try another way. Ask the user only when the task cannot go on without them."""

# what Codex's fallback metadata says of a model it does not know, but the window, the input
# kinds and the instructions
FALLBACK_SETTINGS: dict[str, Any] = {
    "description": None,
    "default_reasoning_level": None,
    "supported_reasoning_levels": [],
    "shell_type": "default",
    "visibility": "list",
    "supported_in_api": True,
    "upgrade": None,
    "supports_reasoning_summaries": False,
    "support_verbosity": False,
    "default_verbosity": None,
    "apply_patch_tool_type": None,
    "truncation_policy": {"mode": "bytes", "limit": 10_000},
    "supports_parallel_tool_calls": False,
    "auto_compact_token_limit": None,
    "effective_context_window_percent": 95,
    "experimental_supported_tools": [],
}


@dataclass(frozen=True)
class CatalogModel:
    """What the catalog says of one served chat model."""

    id: str
    context_window: int
    vision: bool = False


def entry(model: CatalogModel, priority: int) -> dict[str, Any]:
    """One model in the catalog (Codex's ``ModelInfo``)."""
    return {
        "slug": model.id,
        "display_name": model.id,
        **FALLBACK_SETTINGS,
        "priority": priority,
        "context_window": model.context_window,
        "max_context_window": model.context_window,
        "input_modalities": ["text", "image"] if model.vision else ["text"],
        "base_instructions": INSTRUCTIONS,
    }


def catalog(models: Sequence[CatalogModel]) -> str:
    """The catalog file's text: the models in the server's order (the first is Codex's
    default when none is named)."""
    return json.dumps({"models": [entry(m, i + 1) for i, m in enumerate(models)]}, indent=2)


def catalog_path(server_url: str, env: Mapping[str, str]) -> Path:
    """Where the catalog of the server at ``server_url`` is kept: under the B3OS home
    (``B3OS_INFER_HOME``, else the user data directory), one file per server."""
    root = env.get("B3OS_INFER_HOME") or platformdirs.user_data_dir("b3os-infer")
    digest = hashlib.sha256(server_url.encode()).hexdigest()[:16]
    return Path(root) / "codex" / f"models-{digest}.json"
