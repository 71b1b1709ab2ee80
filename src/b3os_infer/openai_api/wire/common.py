"""Value types shared by chat and legacy completions: sampling ranges, stop strings,
stream options, and checks with messages in our own words."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from ...wire_models import Ignored, Supported, WireModel


def matching(pattern: str, message: str) -> AfterValidator:
    """A string check that fails with ``message`` (pydantic's would quote the regex)."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise PydanticCustomError("string_pattern_mismatch", message)
        return value

    return AfterValidator(check)


Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TopP = Annotated[float, Field(ge=0.0, le=1.0)]
TopK = Annotated[int, Field(ge=0)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]
PositiveInt = Annotated[int, Field(ge=1)]
Choices = Annotated[int, Field(ge=1, le=8)]
TokenIdKey = Annotated[str, matching(r"[0-9]+", "keys should be token ids (non-negative "
                                                "integers)")]
LogitBias = dict[TokenIdKey, Annotated[float, Field(ge=-100.0, le=100.0)]]
StopString = Annotated[str, Field(min_length=1)]
Stop = StopString | Annotated[list[StopString], Field(max_length=4)]


class ChatCompletionStreamOptionsParam(WireModel):
    include_usage: Annotated[bool | None, Supported(
        "`usage: null` on every chunk, then one chunk with `choices: []` and the usage")
    ] = None
    include_obfuscation: Annotated[bool | None, Ignored(
        "no obfuscation padding is sent")] = None


def stop_strings(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)
