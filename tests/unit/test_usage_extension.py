"""The ``b3os.speculative`` usage counts on every API's usage object: there with the counts
where the reply was drafted for, absent where it was not (the API's usage exactly)."""

from __future__ import annotations

import json

from b3os_infer.anthropic import encode as anthropic
from b3os_infer.core import Usage
from b3os_infer.openai_api import encode as chat
from b3os_infer.openai_api.responses.output import response_usage

DRAFTED = Usage(input_tokens=10, output_tokens=50, drafted_tokens=40, accepted_tokens=31)
PLAIN = Usage(input_tokens=10, output_tokens=50)
COUNTS = {"speculative": {"drafted": 40, "accepted": 31}}


def test_the_messages_usage_carries_the_draft_counts_only_where_there_were_drafts():
    assert json.loads(anthropic.usage_of(DRAFTED).to_json())["b3os"] == COUNTS
    assert "b3os" not in json.loads(anthropic.usage_of(PLAIN).to_json())


def test_chat_completion_usage_carries_the_draft_counts_only_where_there_were_drafts():
    assert json.loads(chat.usage_of(DRAFTED).to_json())["b3os"] == COUNTS
    assert "b3os" not in json.loads(chat.usage_of(PLAIN).to_json())


def test_responses_usage_carries_the_draft_counts_only_where_there_were_drafts():
    assert json.loads(response_usage(DRAFTED).to_json())["b3os"] == COUNTS
    assert "b3os" not in json.loads(response_usage(PLAIN).to_json())
