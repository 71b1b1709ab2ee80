"""The typed wire: request models shared by both API packages, and their field policy.

Each wire package (``anthropic/``, ``openai_api/``) declares its requests as pydantic
models derived from ``WireModel``. Every field carries exactly one policy marker:

- ``Supported(note)``: the field is read and honoured as the real API does;
- ``Ignored(note)``: accepted and dropped (it cannot change the answer here);
- ``Refused(note)``: present and not null, it is a 400 ``unsupported_parameter`` naming it.

A key the model does not declare is refused the same way (``extra="forbid"``). Decoding
a body is validating it (``decode``): the first pydantic error becomes an
``InvalidRequest`` whose ``param`` is the field's path as the client wrote it
(``messages[2].content[1].source``). The policy tables in the docs are rendered from the
models' markers (``policy_rules``), so a documented field is a field a model reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    GetCoreSchemaHandler,
    Tag,
    ValidationError,
)
from pydantic_core import PydanticCustomError, core_schema

from .errors import InvalidRequest, UnsupportedParameter

Status = Literal["supported", "ignored", "refused"]
M = TypeVar("M", bound=BaseModel)

# error types that mean "this field or kind is not served", not "this value is malformed"
_REFUSALS = {"extra_forbidden", "refused", "refused_kind"}


@dataclass(frozen=True)
class Supported:
    note: str
    status: Status = "supported"


@dataclass(frozen=True)
class Ignored:
    note: str
    status: Status = "ignored"


@dataclass(frozen=True)
class Refused:
    """A field whose silent omission would change the answer: any value but null is
    refused, with ``note`` saying why."""

    note: str
    status: Status = "refused"

    def __get_pydantic_core_schema__(self, source: Any,
                                     handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._refuse, handler(source))

    def _refuse(self, value: object) -> None:
        if value is not None:
            raise PydanticCustomError("refused", "not supported here ({note})",
                                      {"note": self.note})


Marker = Supported | Ignored | Refused


class SentModel(BaseModel):
    """An object we send: built by our code, serialised once, by pydantic's serializer,
    straight to the bytes that go out. An API that leaves out the fields a response never
    set (chat completions) sets ``omit_unset``; the others send every field."""

    model_config = ConfigDict(protected_namespaces=())
    omit_unset: ClassVar[bool] = False

    def to_json(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self, exclude_unset=self.omit_unset)


class WireModel(BaseModel):
    """A request object as the client sends it: strict JSON types, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True,
                              populate_by_name=True, protected_namespaces=())


# ---- kinds: the `type` of content blocks, tools, ... --------------------------------


@dataclass(frozen=True)
class Kind:
    name: str
    status: Status
    note: str


@dataclass(frozen=True)
class KindTable:
    """The policy of one tagged union's ``type`` values; a name ending in ``*`` covers
    every type with that prefix. ``what`` names a member in messages ("content block")."""

    what: str
    kinds: tuple[Kind, ...]
    at: str | None = None   # the key an error names inside the member ("type"), if any
    key: str = "type"       # the member's key that says its kind ("role" for messages)

    def find(self, name: str) -> Kind | None:
        for kind in self.kinds:
            if kind.name == name or (kind.name.endswith("*")
                                     and name.startswith(kind.name[:-1])):
                return kind
        return None

    def discriminator(self, default: str | None = None,
                      plain: str | None = None) -> Discriminator:
        """For a union of ``Annotated[Model, member("name")]``: the member is picked by the
        object's ``key`` (``default`` when absent); a type the table refuses or does not
        know is refused, naming it and saying why. A value that is not an object goes to
        the member tagged ``Tag(plain)`` (a mode string beside the objects), if any."""

        def pick(value: Any) -> str | None:
            if isinstance(value, BaseModel):
                return tag_name(str(getattr(value, self.key, default)))
            if not isinstance(value, dict):
                return plain
            name = value.get(self.key)
            name = default if name is None else name   # absent or null: the default
            if not isinstance(name, str):
                return _MISSING + self.key
            kind = self.find(name)
            return f"refused:{self.what}:{name}" if kind is None or kind.status == "refused" \
                else tag_name(name)

        return Discriminator(pick)

    def names(self, status: Status) -> tuple[str, ...]:
        return tuple(k.name for k in self.kinds if k.status == status)


_MISSING = "missing:"  # the tag of an object without a usable kind key


def tag_name(kind: str) -> str:
    """A union member's tag: not a key any client writes, so error paths can drop it."""
    return "type=" + kind


def member(kind: str) -> Tag:
    """The tag of the union member for ``type`` ``kind``."""
    return Tag(tag_name(kind))


def kinds(what: str, *rows: tuple[str, Status, str], at: str | None = None,
          key: str = "type") -> KindTable:
    return KindTable(what, tuple(Kind(*row) for row in rows), at, key)


def refusal_for(table: KindTable, value: Any, path: str) -> UnsupportedParameter:
    name = value.get(table.key) if isinstance(value, dict) else None
    kind = table.find(str(name))
    why = kind.note if kind is not None else f"unknown {table.what} type"
    at = f"{path}.{table.at}" if table.at else path
    return UnsupportedParameter(f"{at}: {table.what}s of {table.key} {name!r} are not "
                                f"supported here ({why})", param=at)


# ---- decoding ------------------------------------------------------------------------


def decode(model: type[M], body: Mapping[str, Any],
           tables: Sequence[KindTable] = ()) -> M:
    """``body`` validated as ``model``; the first error as our ``InvalidRequest``."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise as_infer_error(exc, body, tables) from None


_ERRORS = 64


def as_infer_error(exc: ValidationError, body: Any,
                   tables: Sequence[KindTable] = ()) -> InvalidRequest:
    """One error for the client: refusals first, then the deepest path; where several
    branches of a union failed at the same place, their messages are joined."""
    # the first errors only: an array of 20,000 wrong items has as many errors, and
    # placing each of them cost about 0.2 s of the event loop (found by the fuzz test)
    errors = [(_path(body, e["loc"]), e) for e in exc.errors(include_url=False)[:_ERRORS]]
    refusals = [item for item in errors if _is_refusal(item[1])]
    path, first = max(refusals or errors, key=lambda item: item[0].count("[")
                      + item[0].count(".") + (1 if item[0] else 0))
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return _union_error(body, first, path, tables)
    if first["type"] in _REFUSALS:
        return UnsupportedParameter(f"{path}: {first['msg']}" if path else first["msg"],
                                    param=path or None)
    same = [_message(e) for p, e in errors if p == path and not _is_refusal(e)]
    return InvalidRequest(f"{path}: {_join(same)}" if path else _join(same),
                          param=path or None)


def _union_error(body: Any, error: Any, path: str,
                 tables: Sequence[KindTable]) -> InvalidRequest:
    """A member of a tagged union that no member takes: a refused or unknown kind, a
    missing kind key, a kind this place does not take, or a value that is no object."""
    tag = str(error.get("ctx", {}).get("tag", ""))
    if error["type"] == "union_tag_invalid" and tag.startswith("refused:"):
        return _kind_refusal(body, error, path, tables)
    if error["type"] == "union_tag_invalid" and tag.startswith(_MISSING):
        return _missing_kind(body, error["loc"], path, tag[len(_MISSING):])
    if error["type"] == "union_tag_invalid":
        return _tag_invalid(body, error, path, tables)
    if isinstance(_value_at(body, error["loc"]), dict):   # a string discriminator's key
        at = _join_path(path, _tag_key(error, body, tables))
        return InvalidRequest(f"{at}: Field required", param=at)
    return InvalidRequest(f"{path}: {_NOT_AN_OBJECT}" if path else _NOT_AN_OBJECT,
                          param=path or None)


_NOT_AN_OBJECT = "Input should be an object"
# pydantic's wording for "not an object" names our classes, which clients never see
_MESSAGES = {"model_type": _NOT_AN_OBJECT, "model_attributes_type": _NOT_AN_OBJECT}


def _message(error: Any) -> str:
    return _MESSAGES.get(error["type"], str(error["msg"]))


def _join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _tag_key(error: Any, body: Any, tables: Sequence[KindTable]) -> str:
    """The key that says a union member's kind: a string discriminator's own, else the
    key of the table that knows the member's kind (``type`` when none does)."""
    named = str(error.get("ctx", {}).get("discriminator", ""))
    if named.startswith("'") and named.endswith("'"):
        return named[1:-1]
    value = _value_at(body, error["loc"])
    fields = value if isinstance(value, dict) else {}
    known = [t for t in tables if t.key in fields and t.find(str(fields[t.key])) is not None]
    return known[0].key if known else "type"


def _tag_invalid(body: Any, error: Any, path: str,
                 tables: Sequence[KindTable]) -> InvalidRequest:
    """A kind the table serves, in a place that takes other kinds (a tool_use block in
    ``system``), or a value no member has: the kind's key, and the kinds it may be."""
    at = _join_path(path, _tag_key(error, body, tables))
    tags = [t.removeprefix(tag_name("")) for t in
            re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected_tags", "")))]
    quoted = [repr(t) for t in tags]
    allowed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return InvalidRequest(f"{at}: Input should be {allowed}", param=at)


def _is_refusal(error: Any) -> bool:
    return bool(error["type"] in _REFUSALS or (error["type"] == "union_tag_invalid"
                                               and "refused:" in str(error.get("ctx", {}))))


def _missing_kind(body: Any, loc: tuple[Any, ...], path: str, key: str) -> InvalidRequest:
    """An object whose kind ``key`` is absent or not a string."""
    value = _value_at(body, loc)
    at = f"{path}.{key}" if path else key
    absent = not isinstance(value, dict) or value.get(key) is None
    why = "Field required" if absent else "Input should be a valid string"
    return InvalidRequest(f"{at}: {why}", param=at)


def _kind_refusal(body: Any, error: Any, path: str,
                  tables: Sequence[KindTable]) -> InvalidRequest:
    """The refusal of a member whose kind its table refuses or does not know; the table
    is the one whose discriminator refused it (by ``what``), else the one that knows the
    kind, else the first whose key the member has."""
    value = _value_at(body, error["loc"])
    fields = value if isinstance(value, dict) else {}
    what = str(error.get("ctx", {}).get("tag", "")).split(":")[1:-1]
    candidates = [t for t in tables if t.key in fields]
    candidates = [t for t in candidates if [t.what] == what] or candidates
    known = [t for t in candidates if t.find(str(fields[t.key])) is not None]
    table = (known or candidates or [KindTable("object", ())])[0]
    return refusal_for(table, fields, path)


def _join(messages: list[str]) -> str:
    unique = list(dict.fromkeys(messages))
    head, rest = unique[0], unique[1:]
    lead = "Input should be "
    if rest and head.startswith(lead) and all(m.startswith(lead) for m in rest):
        return head + "".join(" or " + m[len(lead):] for m in rest)
    return "; ".join(unique)


def _steps(body: Any, loc: Iterable[Any]) -> list[str | int]:
    """The parts of ``loc`` that are keys and indexes of ``body`` itself: pydantic adds
    the names of union branches and tags (``str``, ``text``, ``function-after[...]``),
    which the client never wrote. A missing key (the last step) is kept."""
    steps: list[str | int] = []
    current = body
    items = list(loc)
    for i, key in enumerate(items):
        last = i == len(items) - 1
        if isinstance(key, int) and isinstance(current, list) and 0 <= key < len(current):
            steps.append(key)
            current = current[key]
        elif isinstance(key, str) and isinstance(current, dict) and (key in current or last):
            steps.append(key)
            current = current.get(key)
    return steps


def _value_at(body: Any, loc: Iterable[Any]) -> Any:
    current = body
    for key in _steps(body, loc):
        current = current[key] if isinstance(key, int) else current.get(key)
    return current


def _path(body: Any, loc: Iterable[Any]) -> str:
    out = ""
    for key in _steps(body, loc):
        out = f"{out}[{key}]" if isinstance(key, int) else (f"{out}.{key}" if out else key)
    return out


# ---- the policy tables, read off the models -----------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    status: Status
    note: str


def marker(model: type[BaseModel], name: str) -> Marker:
    """The policy marker of one field (by its attribute name)."""
    info = model.model_fields[name]
    found = [m for m in info.metadata if isinstance(m, Supported | Ignored | Refused)]
    if len(found) != 1:
        raise TypeError(f"{model.__name__}.{name} needs exactly one policy marker")
    return found[0]


def policy_rules(model: type[BaseModel]) -> tuple[Rule, ...]:
    """One rule per field of ``model``, by the name the client writes."""
    rules = []
    for name, info in model.model_fields.items():
        found = marker(model, name)
        rules.append(Rule(info.alias or name, found.status, found.note))
    return tuple(rules)


def kind_rules(table: KindTable) -> tuple[Rule, ...]:
    return tuple(Rule(k.name, k.status, k.note) for k in table.kinds)


_LABELS = {"supported": "Supported", "ignored": "Accepted and ignored",
           "refused": "Refused (400, `unsupported_parameter`)"}


def render_tables(tables: Iterable[tuple[str, tuple[Rule, ...]]]) -> str:
    """Markdown: per table a heading, then one list per status."""
    out = []
    for title, rules in tables:
        out.append(f"### {title}\n")
        for status in ("supported", "ignored", "refused"):
            rows = [r for r in rules if r.status == status]
            if not rows:
                continue
            out.append(f"**{_LABELS[status]}**\n")
            out.append("| name | notes |\n|---|---|")
            out.extend(f"| `{r.name}` | {r.note} |" for r in rows)
            out.append("")
    return "\n".join(out)
