"""The base of every table of the config file: unknown keys and wrong types are refused, a
TOML integer is taken where a number is expected, and nothing else is converted."""

from __future__ import annotations

from collections.abc import Iterable

from annotated_types import Ge, Gt, Le, Lt
from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.fields import FieldInfo


class Section(BaseModel):
    """One table of ``b3os.toml``; each field's description is its line in
    docs/configuration.md (``python -m b3os_infer.config.reference``)."""

    model_config = ConfigDict(extra="forbid", strict=True)


_SIGNS = ((Ge, "ge", ">="), (Gt, "gt", ">"), (Le, "le", "<="), (Lt, "lt", "<"))


def bounds(field: FieldInfo) -> list[str]:
    """A key's bounds as the docs and the errors say them: ``>= 1``, ``<= 65535``."""
    return [f"{sign} {getattr(meta, attr)}" for meta in field.metadata
            for kind, attr, sign in _SIGNS if isinstance(meta, kind)]


def one_of(choices: Iterable[str], *, empty: bool = False) -> AfterValidator:
    """A key that takes only ``choices`` (or ``""`` where ``empty``), naming them when it
    refuses another value."""
    allowed = tuple(choices)

    def check(value: str) -> str:
        if value not in allowed and not (empty and value == ""):
            raise ValueError(f"should be one of {', '.join(allowed)}")
        return value

    return AfterValidator(check)
