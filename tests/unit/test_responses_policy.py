"""The Responses field policy: the docs match the table, and decoding does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from b3os_infer.errors import InvalidRequest, UnsupportedParameter
from b3os_infer.openai_api.responses import policy
from b3os_infer.openai_api.responses.decode import decode_params

DOC = Path(__file__).resolve().parents[2] / "docs" / "responses.md"
# a value of the right shape for each top-level field the table ignores or refuses
SAMPLES = {
    "store": False, "metadata": {"k": "v"}, "prompt_cache_key": "k",
    "prompt_cache_retention": "24h", "client_metadata": {"x": "y"}, "service_tier": "auto",
    "user": "u", "safety_identifier": "s", "previous_response_id": "resp_1",
    "conversation": "conv_1", "background": True, "prompt": {"id": "p"}, "top_logprobs": 2,
    "max_tool_calls": 3, "context_management": [{"type": "compaction"}],
}


def test_docs_are_rendered_from_the_table():
    rendered = re.search(r"<!-- policy:begin -->\n(.*)<!-- policy:end -->",
                         DOC.read_text(), re.S)
    assert rendered, "docs/responses.md lost its policy markers"
    assert rendered.group(1).strip() == policy.render_markdown().strip(), \
        "run: python -m b3os_infer.openai_api.responses.policy, and paste it between " \
        "the markers"


@pytest.mark.parametrize("rule", [r for r in policy.FIELDS if r.status != "supported"],
                         ids=lambda r: r.name)
def test_each_ignored_field_is_accepted_and_each_refused_one_names_itself(rule):
    body = {"model": "m", "input": "hi", rule.name: SAMPLES[rule.name]}
    if rule.status == "ignored":
        decode_params(body)
        return
    with pytest.raises(UnsupportedParameter) as info:
        decode_params(body)
    assert info.value.param == rule.name


def test_unknown_item_fields_are_accepted_but_unknown_request_fields_are_not():
    decode_params({"model": "m", "input": [{"role": "user", "content": "hi", "x": 1}]})
    with pytest.raises(InvalidRequest) as info:
        decode_params({"model": "m", "input": "hi", "x": 1})
    assert info.value.param == "x"
