"""Grammars that make tool calls and structured outputs valid by construction.

JSON Schema is turned into GBNF by llama.cpp's own converter (shipped with
llama-cpp-python); we compose its output into the tool-call layout of our profiles.
"""

from __future__ import annotations

import re
from typing import Any

from llama_cpp.llama_grammar import PRIMITIVE_RULES, RESERVED_NAMES, SchemaConverter

from ..core import Tool
from ..engine.base import Grammar
from ..errors import InvalidRequest
from .numeric_ranges import bounded_rule, has_bounds
from .profiles import CALL_CLOSE, CALL_OPEN

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


class _Converter(SchemaConverter):  # type: ignore[misc]
    """llama.cpp's converter, plus numeric bounds (which it leaves unenforced)."""

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

_ROOT = re.compile(r"^root\s*::=", re.M)


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Objects without an explicit ``additionalProperties`` get only their declared keys.

    The output stays valid against the caller's schema and a small model stays on track.
    """
    if schema.get("type") == "object" and "additionalProperties" not in schema:
        return {**schema, "additionalProperties": False}
    return schema


def schema_gbnf(schema: dict[str, Any], *, param: str,
                prop_order: list[str] | None = None) -> str:
    try:
        return json_schema_to_gbnf(schema, prop_order)
    except Exception as exc:  # noqa: BLE001 - the converter raises many kinds
        raise InvalidRequest(f"{param}: this JSON Schema cannot be enforced: {exc}",
                             param=param) from exc


def _call_schema(tool: Tool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": _closed(tool.input_schema)},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def tool_call_grammar(tools: list[Tool], *, parallel: bool, lazy: bool,
                      tools_param: str = "tools") -> Grammar:
    """``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, once or repeated."""
    for index, tool in enumerate(tools):
        schema_gbnf(_call_schema(tool), param=f"{tools_param}[{index}].input_schema",
                    prop_order=["name", "arguments"])
    union = {"anyOf": [_call_schema(t) for t in tools]} if len(tools) > 1 \
        else _call_schema(tools[0])
    calls = schema_gbnf(union, param=tools_param, prop_order=["name", "arguments"])
    call = _ROOT.sub("call ::=", calls, count=1)
    one = f'"{CALL_OPEN}\\n" call "\\n{CALL_CLOSE}"'
    root = f"root ::= {one} (\"\\n\" {one})*" if parallel else f"root ::= {one}"
    return Grammar(gbnf=f"{root}\n{call}", trigger=CALL_OPEN if lazy else None)


def json_grammar(schema: dict[str, Any], *, param: str) -> Grammar:
    return Grammar(gbnf=schema_gbnf(_closed(schema), param=param))
