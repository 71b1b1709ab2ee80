"""The OpenAI field policy: the docs match the table, and decoding does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.openai_api import policy
from b3os_infer.openai_api.completions import decode_completion_request
from b3os_infer.openai_api.decode import decode_chat_request

DOC = Path(__file__).resolve().parents[2] / "docs" / "openai.md"
USER = {"role": "user", "content": "Hi"}
# a value of the right shape for each field the tables accept or refuse
SAMPLES = {
    "user": "u1", "safety_identifier": "s", "metadata": {"k": "v"}, "store": True,
    "service_tier": "auto", "prompt_cache_key": "k", "prompt_cache_retention": "24h",
    "verbosity": "low", "modalities": ["text"],
    "prediction": {"type": "content", "content": "x"},
    "audio": {"voice": "alloy", "format": "wav"}, "web_search_options": {},
    "functions": [{"name": "f"}], "function_call": "auto", "suffix": "x",
    "prompt_cache_options": {"mode": "implicit", "ttl": "30m"},
    "moderation": {"model": "omni-moderation-latest"},
}


def chat(**changes):
    return {"model": "m", "messages": [USER], **changes}


def test_docs_are_rendered_from_the_table():
    text = DOC.read_text()
    rendered = re.search(r"<!-- policy:begin -->\n(.*)<!-- policy:end -->", text, re.S)
    assert rendered, "docs/openai.md lost its policy markers"
    assert rendered.group(1).strip() == policy.render_markdown().strip(), \
        "run: python -m b3os_infer.openai_api.policy, and paste it between the markers"


@pytest.mark.parametrize("table", [rules for _, rules in policy.TABLES])
def test_each_name_is_in_exactly_one_list(table):
    names = [r.name for r in table]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", policy.names(policy.CHAT_FIELDS, "ignored"))
def test_ignored_chat_fields_are_accepted(name):
    decode_chat_request(chat(**{name: SAMPLES[name]}))


@pytest.mark.parametrize("name", policy.names(policy.CHAT_FIELDS, "refused"))
def test_refused_chat_fields_name_themselves(name):
    with pytest.raises(UnsupportedParameter) as info:
        decode_chat_request(chat(**{name: SAMPLES[name]}))
    assert info.value.param == name and info.value.code == "unsupported_parameter"


@pytest.mark.parametrize("name", policy.names(policy.COMPLETIONS_FIELDS, "refused"))
def test_refused_completion_fields_name_themselves(name):
    with pytest.raises(UnsupportedParameter) as info:
        decode_completion_request({"model": "m", "prompt": "x", name: SAMPLES[name]})
    assert info.value.param == name


@pytest.mark.parametrize("kind", policy.names(policy.CONTENT_PARTS, "refused"))
def test_refused_content_parts_are_named_by_path(kind):
    message = {"role": "user", "content": [{"type": "text", "text": "a"},
                                           {"type": kind, kind: {}}]}
    with pytest.raises(UnsupportedParameter) as info:
        decode_chat_request(chat(messages=[message]))
    assert info.value.param == "messages[0].content[1]"


def test_message_fields_follow_the_table():
    named = {"role": "user", "content": "a", "name": "ann"}
    decode_chat_request(chat(messages=[named]))
    with pytest.raises(UnsupportedParameter) as info:
        decode_chat_request(chat(messages=[USER, {"role": "assistant", "content": "x",
                                                  "audio": {"id": "a"}}]))
    assert info.value.param == "messages[1].audio"


def test_tools_choice_and_format_decode_into_the_neutral_request():
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}}}}
    request, options = decode_chat_request(chat(
        tools=[tool], tool_choice="required", parallel_tool_calls=False, n=2, logprobs=True,
        top_logprobs=3, reasoning_effort="low", max_completion_tokens=100,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "object"}}}))
    assert request.tool_choice.mode == "required" and not request.tool_choice.parallel
    assert request.tools[0].input_schema["properties"] == {"a": {"type": "integer"}}
    assert request.top_logprobs == 3 and options.n == 2 and options.logprobs
    assert request.thinking is not None and request.thinking.budget_tokens == 50
    assert request.response_schema == {"type": "object"}


def test_a_tool_message_must_answer_a_call():
    with pytest.raises(InvalidRequest) as info:
        decode_chat_request(chat(messages=[USER, {"role": "tool", "tool_call_id": "c",
                                                  "content": "x"}]))
    assert info.value.param == "messages[1]"


def test_reasoning_is_read_in_both_spellings():
    for key in ("reasoning_content", "reasoning"):
        request, _ = decode_chat_request(chat(messages=[
            USER, {"role": "assistant", "content": "ok", key: "because"}, USER]))
        assert request.messages[1].parts[0].thinking == "because"


def test_legacy_prompts_and_limits():
    many = decode_completion_request({"model": "m", "prompt": [[1, 2], "x"], "n": 2,
                                      "best_of": 2})
    assert many.prompts == [[1, 2], "x"] and many.base.max_tokens == 16
    with pytest.raises(InvalidRequest) as info:
        decode_completion_request({"model": "m", "prompt": [[1, "a"]]})
    assert info.value.param == "prompt[0][1]"
    with pytest.raises(InvalidRequest):
        decode_completion_request({"model": "m", "prompt": "x", "best_of": 3})
