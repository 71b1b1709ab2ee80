"""docs/configuration.md, rendered from the tables' models: every key with its type, bounds,
default and meaning, so the documented defaults are the ones the loader applies.

``python -m b3os_infer.config.reference > docs/configuration.md`` writes it; a unit test
fails when the file and the models differ.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from .load import Config
from .models import ENGINE_MODELS, ModelBasics
from .section import bounds

HEADER = """\
# Configuration reference

<!-- Rendered from src/b3os_infer/config by
     `python -m b3os_infer.config.reference > docs/configuration.md`; do not edit by hand. -->

`b3os-infer serve --config FILE` (and `node`, `edge`) reads one TOML file. Every table and
key is optional; a table left out has the defaults below. An unknown table or key, a value of
the wrong type and a number out of bounds stop the server at start with the file, the table
and the key named, such as `b3os.toml [engine]: threads should be an integer >= 1`. A TOML
integer is taken where a number is expected (`check_seconds = 1`); nothing else is converted
(`display_name = 5` is refused, not read as `"5"`). The README's "Configuration" section shows
a whole file with comments.
"""

_PER_MODEL_NOTE = {
    "limits": 'One table for every model, `[limits.default]`, and one per model id, '
              '`[limits."model id"]`, whose keys override single keys of the default one.',
    "concurrency": 'One table for every model, `[concurrency.default]`, and one per model id, '
                   '`[concurrency."model id"]`, merged like `[limits]`.',
}


def render() -> str:
    """The whole reference, one section per table in the order ``Config`` declares them."""
    parts = [HEADER]
    for name, field in Config.model_fields.items():
        if name == "models":
            continue  # with [model]
        parts.append(_table(name, field))
    return "\n".join(parts)


def _table(name: str, field: FieldInfo) -> str:
    if name == "model":
        return _models()
    annotation = field.annotation
    if get_origin(annotation) is dict:
        section = get_args(annotation)[1]
        title = f'`[{name}.default]`, `[{name}."model id"]`'
        return _section(title, _PER_MODEL_NOTE[name], section.model_fields)
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return _section(f"`[{name}]`", _doc(annotation), annotation.model_fields)


def _models() -> str:
    intro = ("`[model]` is the one model a node serves (beside the default embedding model); a "
             "list of `[[models]]` tables, each with its `id`, replaces it. `engine` says what "
             'serves a model (unset: `bert` where `kind = "embedding"`, else `llamacpp`); each '
             "engine reads the keys every model has and its own, and refuses the others'.")
    engines = " or ".join(f'`"{engine}"`' for engine in ENGINE_MODELS)
    engine_row = f"| `engine` | {engines} | unset | what serves it (below) |"
    parts = [_section("`[model]`, `[[models]]`", intro, ModelBasics.model_fields, [engine_row])]
    for engine, model in ENGINE_MODELS.items():
        own = {k: f for k, f in model.model_fields.items() if k != "engine" and (
            k not in ModelBasics.model_fields or k == "kind" and model.KIND != "chat")}
        parts.append(_section(f'`engine = "{engine}"`', _doc(model), own, level=3))
    return "\n".join(parts)


def _section(title: str, intro: str, fields: dict[str, FieldInfo],
             first: list[str] | None = None, level: int = 2) -> str:
    rows = [f"{'#' * level} {title}", "", intro, "",
            "| key | type | default | |", "|---|---|---|---|", *(first or [])]
    rows += [f"| `{key}` | {_type(f)} | {_default(f)} | {_cell(f.description or '')} |"
             for key, f in fields.items()]
    return "\n".join(rows) + "\n"


def _doc(model: type[BaseModel]) -> str:
    return " ".join(inspect.cleandoc(model.__doc__ or "").split()).replace("``", "`")


def _type(field: FieldInfo) -> str:
    return " ".join([_type_name(field.annotation), ", ".join(bounds(field))]).strip()


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None))
    if origin is list:
        return f"list of {_type_name(args[0])}s"
    if origin is Literal:
        return " or ".join(f'`"{a}"`' for a in args)
    names = {int: "integer", float: "number", bool: "boolean", str: "string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int) and value >= 10_000:
        return f"`{value}`" + (f" ({value >> 20} MiB)" if value % (1 << 20) == 0 else "")
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


if __name__ == "__main__":
    sys.stdout.write(render())
