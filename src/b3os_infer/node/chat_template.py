"""Chat templates with Hugging Face semantics, rendered in a sandboxed Jinja2 environment.

The template source comes from the model (GGUF metadata ``tokenizer.chat_template``).
Rendering follows transformers' ``apply_chat_template``: the variables ``messages``,
``tools``, ``add_generation_prompt``, ``bos_token``, ``eos_token`` plus any extra keyword
(``enable_thinking`` ...); ``trim_blocks`` and ``lstrip_blocks`` on; ``raise_exception``
and ``strftime_now`` available; ``tojson`` that keeps non-ASCII characters.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from jinja2 import TemplateError, Undefined
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import InvalidRequest


class TemplateRaised(InvalidRequest):
    """The template itself refused the conversation (``raise_exception``)."""


def _raise_exception(message: str) -> None:
    raise TemplateRaised(f"the model's chat template refused this conversation: {message}",
                         param="turns")


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: Any = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols], undefined=Undefined
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


class ChatTemplate:
    """One compiled chat template and the special tokens it may refer to."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._template = _environment().from_string(source)

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True,
               tools: list[dict[str, Any]] | None = None, **extra: Any) -> str:
        variables = {
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **extra,
        }
        try:
            return self._template.render(**variables)
        except TemplateRaised:
            raise
        except TemplateError as exc:
            raise InvalidRequest(f"the model's chat template could not render this "
                                 f"conversation: {exc}", param="turns") from exc

