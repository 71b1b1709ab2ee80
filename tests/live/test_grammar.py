"""Grammars from real-world tool schemas must be accepted by llama.cpp's grammar engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from b3os_infer.core import Tool
from b3os_infer.engine.gbnf import GbnfCompiler
from b3os_infer.engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from b3os_infer.engine.samplers import grammar_sampler
from b3os_infer.node.grammar import json_grammar, tool_call_grammar
from b3os_infer.node.models import default_model_path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code_tools.json"
TOOLS = [Tool(t["name"], None, t["input_schema"]) for t in json.loads(FIXTURE.read_text())["tools"]]

GBNF = GbnfCompiler()


@pytest.fixture(scope="module")
def vocab():
    engine = LlamaCppEngine(LlamaCppSettings(str(default_model_path()), parallel=1,
                                             context_window=512))
    return engine._vocab


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_each_claude_code_tool_builds_a_grammar(vocab, tool):
    assert grammar_sampler(vocab, tool_call_grammar(GBNF, [tool], parallel=False, lazy=False))


def test_all_claude_code_tools_together_lazily(vocab):
    assert grammar_sampler(vocab, tool_call_grammar(GBNF, TOOLS, parallel=True, lazy=True))


def test_schemas_without_constraints_and_with_bounds(vocab):
    schema = {"type": "object", "properties": {
        "any": {"description": "anything"}, "flag": True,
        "n": {"type": "integer", "minimum": 0, "maximum": 9007199254740991},
        "x": {"type": "number", "exclusiveMinimum": 0},
        "s": {"type": "string", "maxLength": 524288}}}
    assert grammar_sampler(vocab, json_grammar(GBNF, schema, param="schema"))
