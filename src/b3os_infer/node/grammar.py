"""Grammars that make tool calls and structured outputs valid by construction.

The engine's grammar compiler turns JSON Schema into GBNF (``engine/llamacpp/gbnf.py``); we compose
its output into the tool-call layout of our profiles.
"""

from __future__ import annotations

import re
from typing import Any

from ..core import Tool
from ..engine.base import Grammar, GrammarCompiler
from ..errors import InvalidRequest
from .profiles import CALL_CLOSE, CALL_OPEN

_ROOT = re.compile(r"^root\s*::=", re.M)


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Objects without an explicit ``additionalProperties`` get only their declared keys.

    The output stays valid against the caller's schema and a small model stays on track.
    """
    if schema.get("type") == "object" and "additionalProperties" not in schema:
        return {**schema, "additionalProperties": False}
    return schema


def schema_gbnf(compiler: GrammarCompiler, schema: dict[str, Any], *, param: str,
                prop_order: list[str] | None = None) -> str:
    try:
        return compiler.json_schema(schema, prop_order)
    except Exception as exc:  # noqa: BLE001 - the converter raises many kinds
        raise InvalidRequest(f"this JSON Schema cannot be enforced: {exc}",
                             param=param) from exc


def _call_schema(tool: Tool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": _closed(tool.input_schema)},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def tool_call_grammar(compiler: GrammarCompiler, tools: list[Tool], *, parallel: bool,
                      lazy: bool, tools_param: str = "tools") -> Grammar:
    """``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, once or repeated."""
    for index, tool in enumerate(tools):
        schema_gbnf(compiler, _call_schema(tool), param=f"{tools_param}[{index}].input_schema",
                    prop_order=["name", "arguments"])
    union = {"anyOf": [_call_schema(t) for t in tools]} if len(tools) > 1 \
        else _call_schema(tools[0])
    calls = schema_gbnf(compiler, union, param=tools_param, prop_order=["name", "arguments"])
    call = _ROOT.sub("call ::=", calls, count=1)
    one = f'"{CALL_OPEN}\\n" call "\\n{CALL_CLOSE}"'
    root = f"root ::= {one} (\"\\n\" {one})*" if parallel else f"root ::= {one}"
    return Grammar(gbnf=f"{root}\n{call}", trigger=CALL_OPEN if lazy else None)


def json_grammar(compiler: GrammarCompiler, schema: dict[str, Any], *, param: str) -> Grammar:
    return Grammar(gbnf=schema_gbnf(compiler, _closed(schema), param=param))
