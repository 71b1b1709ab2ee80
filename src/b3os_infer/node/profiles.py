"""How a model family writes reasoning and tool calls, read off its chat template.

Two families of behaviour are covered:

- templates that render ``tools`` themselves and understand ``enable_thinking`` /
  ``reasoning_content`` (Qwen3 and the like) are used natively;
- templates that know neither (SmolLM2, plain ChatML) get our generic tool prompt and
  our reasoning profile: a ``<think>`` section opened in the generation prompt and closed
  by the model or by the budget (see docs/anthropic.md).

Both families call tools as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

THINK_START = "<think>"
THINK_OPEN = THINK_START + "\n"
THINK_END = "</think>"
THINK_CLOSE = "\n</think>\n\n"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"


@dataclass(frozen=True)
class ModelProfile:
    native_tools: bool
    native_reasoning: bool

    @property
    def name(self) -> str:
        return "native" if self.native_tools or self.native_reasoning else "generic"


def detect_profile(template_source: str) -> ModelProfile:
    return ModelProfile(
        native_tools=re.search(r"\btools\b", template_source) is not None,
        native_reasoning="enable_thinking" in template_source
        or "reasoning_content" in template_source,
    )
