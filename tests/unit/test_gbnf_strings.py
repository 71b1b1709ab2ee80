"""JSON strings in the grammars made from JSON Schema hold no raw control characters."""

from __future__ import annotations

import re

from b3os_infer.engine.llamacpp.gbnf import json_schema_to_gbnf


def test_a_json_string_in_a_grammar_leaves_out_raw_control_characters():
    grammar = json_schema_to_gbnf({"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "maxLength": 3}}})
    (char,) = re.findall(r"^char ::= (.*)$", grammar, re.M)
    assert char.startswith(r'[^"\\\x7F\x00-\x1F] | "\\" ')
    assert grammar.count("char ::=") == 1   # bounded strings use the same rule
