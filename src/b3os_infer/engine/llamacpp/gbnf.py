"""JSON Schema to GBNF, with llama.cpp's own converter (shipped with llama-cpp-python).

The engines that apply grammars (llama.cpp in process, and the upstream flavours, which
all take GBNF) get their grammars from here; the node composes the output into its
tool-call layout (``node/grammar.py``) without knowing how it was made.
"""

from __future__ import annotations

from typing import Any

from llama_cpp.llama_grammar import (
    PRIMITIVE_RULES,
    RESERVED_NAMES,
    BuiltinRule,
    SchemaConverter,
)

from .numeric_ranges import bounded_rule, has_bounds

_SHAPING = {"type", "const", "enum", "$ref", "anyOf", "oneOf", "allOf", "properties",
            "additionalProperties", "items", "prefixItems", "pattern", "format", "minLength",
            "maxLength", "minItems", "maxItems", "required"}


# llama.cpp's grammar parser expands counted repeats into rules and refuses large ones
# (Claude Code declares a string with maxLength 524288); longer bounds are left out.
MAX_EXPANDED_LENGTH = 4096
MAX_EXPANDED_ITEMS = 256


def _expandable(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    drop = set()
    if schema.get("maxLength", 0) > MAX_EXPANDED_LENGTH:
        drop |= {"maxLength"}
    if schema.get("minLength", 0) > MAX_EXPANDED_LENGTH:
        drop |= {"minLength", "maxLength"}
    if schema.get("maxItems", 0) > MAX_EXPANDED_ITEMS:
        drop |= {"maxItems"}
    if schema.get("minItems", 0) > MAX_EXPANDED_ITEMS:
        drop |= {"minItems", "maxItems"}
    return {k: v for k, v in schema.items() if k not in drop} if drop else schema


# llama-cpp-python's converter lets a string hold raw control characters (a newline, say),
# which JSON forbids; llama.cpp's own converter leaves them out, and so does this one.
JSON_CHAR = BuiltinRule(r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] '
                        r'[0-9a-fA-F] [0-9a-fA-F])', [])


class _Converter(SchemaConverter):
    """llama.cpp's converter, plus numeric bounds (which it leaves unenforced), and JSON
    strings without raw control characters."""

    def _add_primitive(self, name: str, rule: BuiltinRule) -> str:
        return str(super()._add_primitive(name, JSON_CHAR if name == "char" else rule))

    def visit(self, schema: Any, name: str) -> str:
        schema = _expandable(schema)
        if schema is True or (isinstance(schema, dict) and not _SHAPING & schema.keys()):
            # no constraint at all (only a description, say): any JSON value
            return str(self._add_primitive("value", PRIMITIVE_RULES["value"]))
        if isinstance(schema, dict) and schema.get("type") in ("integer", "number") \
                and has_bounds(schema):
            rule_name = name + "-" if name in RESERVED_NAMES else name or "root"
            return str(self._add_rule(rule_name, bounded_rule(schema) + " space"))
        return str(super().visit(schema, name))


def json_schema_to_gbnf(schema: dict[str, Any], prop_order: list[str] | None = None) -> str:
    converter = _Converter(prop_order={n: i for i, n in enumerate(prop_order or [])},
                           allow_fetch=False, dotall=False, raw_pattern=False)
    resolved = converter.resolve_refs(schema, "request")
    converter.visit(resolved, "")
    return str(converter.format_grammar())


class GbnfCompiler:
    """The ``GrammarCompiler`` of engines that take GBNF."""

    def json_schema(self, schema: dict[str, Any], prop_order: list[str] | None = None) -> str:
        return json_schema_to_gbnf(schema, prop_order)
