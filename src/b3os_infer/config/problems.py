"""What is wrong with a config file, said in the file's own terms: the file, the table
(``[engine]``, ``[[models]] #2``, ``[limits."model id"]``), the key, and what it should be
(``threads should be an integer >= 1``), one line a problem."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .models import ENGINE_MODELS, ENGINES, LlamacppModel
from .section import bounds

Loc = tuple[int | str, ...]


def said(path: Path, errors: list[ErrorDetails], config: type[BaseModel]) -> list[str]:
    """One line per problem of ``errors`` (pydantic's, validating ``config``)."""
    lines: list[str] = []
    seen: set[Loc] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if loc in seen:   # a key that fits no branch of its type: once
            continue
        seen.add(loc)
        place = _where(loc, config)
        where = f"{path} {place.table}".rstrip()
        lines.append(f"{where}: {_problem(place, error)}")
    return lines


@dataclass(frozen=True)
class _Place:
    """Where in the file an error is: the table, the key (None: the table itself), the
    engine of a model's table (pydantic names the model it tried) and the table's model."""

    table: str
    key: str | None = None
    engine: str | None = None
    model: type[BaseModel] | None = None

    @property
    def field(self) -> FieldInfo | None:
        return self.model.model_fields.get(self.key) if self.model and self.key else None


def _where(loc: Loc, config: type[BaseModel]) -> _Place:
    if not loc:
        return _Place("")
    section, rest = str(loc[0]), loc[1:]
    if section not in config.model_fields:
        return _Place("", f"[{section}]")
    if section == "models" and rest and isinstance(rest[0], int):
        return _model_place(f"[[models]] #{rest[0] + 1}", rest[1:])
    if section == "model":
        return _model_place("[model]", rest)
    table = _table_model(config.model_fields[section])
    if section in ("limits", "concurrency") and rest:
        name = str(rest[0])
        label = name if name == "default" else f'"{name}"'
        return _Place(f"[{section}.{label}]", _key(rest[1:]), model=table)
    return _Place(f"[{section}]", _key(rest), model=table)


def _table_model(field: FieldInfo) -> type[BaseModel] | None:
    annotation = field.annotation
    if get_origin(annotation) is dict:
        annotation = get_args(annotation)[1]
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) \
        else None


def _model_place(table: str, rest: Loc) -> _Place:
    if rest and rest[0] in ENGINES:
        engine = str(rest[0])
        return _Place(table, _key(rest[1:]), engine, ENGINE_MODELS[engine])
    return _Place(table, _key(rest), model=LlamacppModel)


def _key(rest: Loc) -> str | None:
    return str(rest[0]) if rest else None


def _problem(place: _Place, error: ErrorDetails) -> str:
    kind, ctx, key = error["type"], error.get("ctx") or {}, place.key
    if kind == "extra_forbidden":
        return _unknown(place)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"engine should be one of {', '.join(ENGINES)}"
    if kind == "value_error":
        told = str(ctx.get("error", error["msg"]))
        return f"{key} {told}" if key and not told.startswith(key) else told
    if kind == "missing":
        return f"{key} is required" + (f" by {place.engine} models" if place.engine else "")
    should = _should(place, kind, ctx) or error["msg"].removeprefix("Input ")
    return f"{key} should be {should}" if key else f"should be {should}"


def _unknown(place: _Place) -> str:
    key = place.key
    if key and key.startswith("["):
        return f"unknown section {key}"
    readers = [name for name, model in ENGINE_MODELS.items() if key in model.model_fields]
    if place.engine and readers:
        return (f"{key} is read by {' and '.join(readers)} models only; this one's engine is "
                f"{place.engine}")
    return f"unknown key {key!r}"


_WORDS = {
    "int_type": "an integer", "int_from_float": "an integer", "float_type": "a number",
    "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
    "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table",
}
_NUMBER_ERRORS = {"int_type", "int_from_float", "float_type"}
_BOUND_ERRORS = {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}


def _should(place: _Place, kind: str, ctx: dict[str, Any]) -> str | None:
    """What the value should be: its type in words, with the key's bounds for a number."""
    if kind == "literal_error":
        return "one of " + ", ".join(re.findall(r"'([^']*)'", str(ctx.get("expected"))))
    field = place.field
    if kind in _BOUND_ERRORS and field is not None:
        word = "a number" if field.annotation in (float, float | None) else "an integer"
    elif kind in _WORDS:
        word = _WORDS[kind]
    else:
        return None
    limits = bounds(field) if field is not None and kind not in _WORDS.keys() - _NUMBER_ERRORS \
        else []
    return " ".join([word, ", ".join(limits)]).strip()
