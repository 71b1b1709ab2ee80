"""Grammars from real-world tool schemas are accepted by llama.cpp's grammar engine, and a lazy
one applies from its trigger on."""

from __future__ import annotations

import json
from pathlib import Path

import llama_cpp as ll
import pytest

from b3os_infer.core import Tool
from b3os_infer.engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from b3os_infer.engine.llamacpp.constrained import ConstrainedSampler, LazyStart, Trigger
from b3os_infer.engine.llamacpp.gbnf import GbnfCompiler
from b3os_infer.engine.llamacpp.gguf import vocab_piece, vocab_tokenize
from b3os_infer.engine.llamacpp.samplers import grammar_sampler
from b3os_infer.node.cards import default_model_path
from b3os_infer.node.grammar import json_grammar, tool_call_grammar

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code_tools.json"
TOOLS = [Tool(t["name"], None, t["input_schema"]) for t in json.loads(FIXTURE.read_text())["tools"]]

GBNF = GbnfCompiler()


@pytest.fixture(scope="module")
def vocab():
    engine = LlamaCppEngine(LlamaCppSettings(str(default_model_path()), parallel=1,
                                             context_window=512))
    return engine.model.vocab


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


def _lazy_sampler(vocab, piece=None) -> ConstrainedSampler:
    grammar = tool_call_grammar(GBNF, TOOLS, parallel=True, lazy=True)
    chain = ll.llama_sampler_chain_init(ll.llama_sampler_chain_default_params())
    lazy = LazyStart(Trigger(grammar.trigger),
                     piece or (lambda t: vocab_piece(vocab, t, special=True).decode()),
                     lambda text: vocab_tokenize(vocab, text, False))
    return ConstrainedSampler(chain, grammar_sampler(vocab, grammar),
                              ll.llama_vocab_n_tokens(vocab), lazy)


def _one(vocab, text: str) -> int:
    tokens = vocab_tokenize(vocab, text, False)
    assert len(tokens) == 1, tokens
    return tokens[0]


def test_a_lazy_grammar_applies_from_its_trigger_on(vocab):
    sampler = _lazy_sampler(vocab)
    for token in vocab_tokenize(vocab, "I will read the file first.\nSure", False):
        sampler.accept(token)
    assert sampler._lazy is not None           # the grammar has not been asked yet
    for token in vocab_tokenize(vocab, "<tool_call>\n", False):
        sampler.accept(token)
    assert sampler._lazy is None and sampler.grammar is not None
    # the grammar stands after the trigger's line: a call object must open
    assert sampler._allows(_one(vocab, "{"))
    assert not sampler._allows(_one(vocab, "hello"))


def test_a_trigger_followed_by_text_the_grammar_refuses_leaves_the_reply_free(vocab):
    sampler = _lazy_sampler(vocab, piece=lambda t: "<tool_call>oops")
    sampler.accept(_one(vocab, "hello"))
    assert sampler.grammar is None             # unconstrained from here: plain text
