"""Our part of a reply's usage on both APIs: the ``b3os`` object beside the API's own counts.

It is there only where it has something to say (speculative decoding drafted tokens for the
reply, docs/engine.md), so a reply without it is the API's usage exactly.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .core import Usage


class SpeculativeUsage(BaseModel):
    model_config = ConfigDict(frozen=True)

    drafted: int     # tokens drafted and checked by the model
    accepted: int    # of those, the ones the model agreed with


class UsageExtension(BaseModel):
    model_config = ConfigDict(frozen=True)

    speculative: SpeculativeUsage


def usage_extension(usage: Usage) -> UsageExtension | None:
    if not usage.drafted_tokens:
        return None
    return UsageExtension(speculative=SpeculativeUsage(drafted=usage.drafted_tokens,
                                                       accepted=usage.accepted_tokens))


def extension_field() -> UsageExtension | None:
    """The ``b3os`` field of a usage model: left out of the JSON when None."""
    return Field(default=None, exclude_if=lambda value: value is None)
