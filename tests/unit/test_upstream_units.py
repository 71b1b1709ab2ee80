"""The upstream adapter's pure parts: request bodies per flavour, chunks, splicing, config."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from b3os_infer.config import ConfigError, load_config
from b3os_infer.core import Sampling
from b3os_infer.engine.base import (
    GenerationDone,
    GenerationRequest,
    Grammar,
    ReasoningBudget,
    TokenEvent,
)
from b3os_infer.engine.scripted.engine import ScriptedEngine
from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.engine.upstream.engine import UpstreamEngine, UpstreamSettings
from b3os_infer.engine.upstream.flavours import FLAVOURS, completion_body, parse_chunk
from b3os_infer.engine.upstream.splice import Director
from b3os_infer.errors import UnsupportedParameter

GREEDY = Sampling(temperature=0.0, top_k=1, seed=7)


def _body(flavour: str, **extra):
    args = dict(model="m", prompt=[1, 2, 3], max_tokens=9, sampling=GREEDY, grammar=None,
                top_logprobs=None)
    return completion_body(FLAVOURS[flavour], **{**args, **extra})


def test_each_flavour_gets_its_grammar_field_and_neutral_defaults():
    assert _body("vllm", grammar="root ::= \"a\"")["structured_outputs"] == {
        "grammar": "root ::= \"a\""}
    assert _body("sglang", grammar="g")["ebnf"] == "g"
    assert _body("llama-server", grammar="g")["grammar"] == "g"
    for name in FLAVOURS:
        body = _body(name)
        assert body["min_p"] == 0.0 and body["seed"] == 7 and body["top_k"] == 1
        assert body.get("repetition_penalty", body.get("repeat_penalty")) == 1.0
    no_top_k = Sampling(top_k=0)
    assert _body("vllm", sampling=no_top_k)["top_k"] == -1
    assert _body("llama-cpp-python", sampling=no_top_k)["top_k"] == 0


def test_logprobs_need_an_engine_that_names_tokens():
    assert _body("vllm", top_logprobs=2)["return_tokens_as_token_ids"] is True
    with pytest.raises(UnsupportedParameter):
        _body("llama-cpp-python", top_logprobs=2)


def test_chunks_with_ids_with_listed_tokens_and_with_usage():
    vllm = parse_chunk({"choices": [{"text": "ab", "token_ids": [5, 6], "finish_reason": None,
                                     "logprobs": {"tokens": ["token_id:5", "token_id:6"],
                                                  "token_logprobs": [-0.1, -0.2],
                                                  "top_logprobs": [{"token_id:5": -0.1,
                                                                    "token_id:9": -3.0}, {}]}}]})
    assert (vllm.text, vllm.count, vllm.token_ids) == ("ab", 2, (5, 6))
    assert vllm.top[0] == ((5, -0.1), (9, -3.0))
    listed = parse_chunk({"choices": [{"text": "I", "logprobs": {"tokens": ["I"]},
                                       "finish_reason": "stop"}]})
    assert (listed.count, listed.finish) == (1, "stop")
    usage = parse_chunk({"choices": [], "usage": {"completion_tokens": 4, "prompt_tokens": 9}})
    assert (usage.count, usage.prompt_tokens) == (0, 9)


def test_lazy_grammar_cuts_before_the_trigger_even_across_pieces():
    director = Director(Grammar("root ::= x", trigger="<tool_call>"), None)
    assert director.active_grammar() is None
    assert director.feed("Sure. <tool", 3) == ("Sure. ", None)
    kept, cut = director.feed("_call>{\"na", 3)
    assert kept == "" and cut is not None and cut.forced == []
    assert director.active_grammar() == "root ::= x"


def test_lazy_grammar_held_text_comes_back_at_the_end():
    director = Director(Grammar("root ::= x", trigger="<tool_call>"), None)
    assert director.feed("a <to", 2) == ("a ", None)
    assert director.finish("eog") == ("<to", None)


BUDGET = ReasoningBudget(budget=4, end_marker="</think>", close_tokens=[11, 12])


def test_a_spent_reasoning_budget_forces_the_close_tokens():
    director = Director(None, BUDGET)
    assert director.feed("hmm", 3) == ("hmm", None)
    kept, cut = director.feed(" so", 1)
    assert kept == " so" and cut is not None and cut.forced == [11, 12]
    assert not director.reasoning_open and director.active_grammar() is None


def test_ending_the_turn_while_reasoning_closes_it_and_goes_on():
    director = Director(None, BUDGET)
    director.feed("a", 1)
    kept, cut = director.finish("eog")
    assert kept == "" and cut is not None and cut.forced == [11, 12]
    assert director.finish("eog") == ("", None)


def test_a_strict_grammar_starts_after_the_model_closes_its_reasoning():
    director = Director(Grammar("root ::= j"), BUDGET)
    assert director.active_grammar() is None
    kept, cut = director.feed("ok</thi", 1)
    assert (kept, cut) == ("ok</thi", None)
    kept, cut = director.feed("nk>\n{\"a", 1)
    assert kept == "nk>" and cut is not None and cut.forced == []
    assert director.active_grammar() == "root ::= j"


def _config(tmp_path: Path, text: str):
    path = tmp_path / "b3os.toml"
    path.write_text(text)
    return load_config(path)


def test_models_list_and_single_model_forms(tmp_path):
    config = _config(tmp_path, """
[[models]]
id = "a"
[[models]]
id = "b"
engine = "upstream"
flavour = "vllm"
url = "http://gpu1:8000"
tokenizer = "/models/qwen"
""")
    assert [(m.id, m.engine) for m in config.served()] == [("a", "llamacpp"), ("b", "upstream")]
    assert [m.id for m in _config(tmp_path, "[model]\nid = \"x\"\n").served()] == [
        "x", "b3os/all-minilm-l6-v2"]
    assert [m.kind for m in load_config(None).served()] == ["chat", "embedding"]


@pytest.mark.parametrize("text, words", [
    ('[model]\nid = "x"\n[[models]]\nid = "y"\n', "either [model] or [[models]]"),
    ('[[models]]\nid = "b"\nengine = "upstream"\nflavour = "vllm"\n',
     "[[models]] #1: url is required by upstream models"),
    ('[[models]]\nid = "b"\nengine = "upstream"\nflavour = "tgi"\nurl = "http://x"\n',
     "flavour should be one of vllm, sglang, llama-server, llama-cpp-python"),
    ('[[models]]\nid = "b"\nengine = "upstream"\nflavour = "vllm"\nurl = "http://x"\n',
     "tokenizer is required by upstream models"),
    ('[[models]]\nid = "a"\n[[models]]\nid = "a"\n', "ids must differ"),
    ('[[models]]\nid = "a"\nkind = "image"\n', "kind 'image' is not served"),
    ('[[models]]\nid = "a"\nkind = "embedding"\nengine = "llamacpp"\n',
     "an embedding model's engine should be one of bert"),
    ('[[models]]\nid = "a"\nengine = "vllm"\n',
     "engine should be one of llamacpp, upstream, scripted, bert"),
    ('[[models]]\nid = "a"\nurl = "http://x"\n',
     "url is read by upstream models only; this one's engine is llamacpp"),
    ('[[models]]\nid = "a"\nengine = "bert"\nkind = "chat"\n',
     "a chat model's engine should be one of llamacpp, upstream, scripted"),
    ('[[models]]\nengine = "scripted"\nscript = "s.json"\n',
     "[[models]] #1: every model needs an id"),
    ('[[models]]\nid = "a"\nflavor = "vllm"\n', "unknown key 'flavor'"),
])
def test_bad_model_tables_are_refused_with_a_reason(tmp_path, text, words):
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        _config(tmp_path, text)


VLLM_STREAM = "".join(f"data: {line}\n\n" for line in [
    '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,'
    '"text":"Hi","logprobs":null,"finish_reason":null,"stop_reason":null,"token_ids":[72]}],'
    '"usage":null}',
    '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,'
    '"text":"!","logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":[33]}],'
    '"usage":null}',
    '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":'
    '{"prompt_tokens":40,"total_tokens":42,"completion_tokens":2,'
    '"prompt_tokens_details":{"cached_tokens":32}}}',
    "[DONE]"])


def test_the_cached_tokens_of_vllms_last_usage_chunk_reach_the_generations_end():
    events = _generate(_vllm_engine(), VLLM_STREAM)
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == "Hi!"
    assert events[-1] == GenerationDone("eog", prompt_tokens=40, cached_tokens=32,
                                        generated_tokens=2)


def _vllm_engine() -> UpstreamEngine:
    return UpstreamEngine(UpstreamSettings(url="http://vllm", flavour="vllm", served_name="m",
                                           context_window=100),
                          ScriptedEngine(Script((Reply("x"),))), vocab_size=300)


def _generate(engine: UpstreamEngine, stream: str, times: int = 1) -> list[object]:
    async def run() -> list[object]:
        engine._client = httpx.AsyncClient(base_url="http://vllm", transport=httpx.MockTransport(
            lambda request: httpx.Response(200, text=stream)))
        request = GenerationRequest(prompt=list(range(40)), max_tokens=10)
        async with engine._client:
            return [event for _ in range(times) async for event in engine.generate(request)]

    return asyncio.run(run())


# what vLLM streams when started without --enable-prompt-tokens-details
VLLM_STREAM_WITHOUT_DETAILS = VLLM_STREAM.replace(
    ',"prompt_tokens_details":{"cached_tokens":32}', "")


def test_a_vllm_that_leaves_cached_tokens_out_is_named_once_with_the_option_to_start_it_with(
        caplog):
    events = _generate(_vllm_engine(), VLLM_STREAM_WITHOUT_DETAILS, times=2)
    assert [e for e in events if isinstance(e, GenerationDone)] == \
        [GenerationDone("eog", prompt_tokens=40, cached_tokens=0, generated_tokens=2)] * 2
    warned = [r.getMessage() for r in caplog.records if "cached" in r.getMessage()]
    assert warned == ["the model service at http://vllm reports no cached prompt tokens, so "
                      "every reply says 0 were cached: start vllm with "
                      "--enable-prompt-tokens-details"]


def test_a_vllm_that_reports_cached_tokens_is_not_warned_about(caplog):
    _generate(_vllm_engine(), VLLM_STREAM)
    assert not [r for r in caplog.records if "cached" in r.getMessage()]
