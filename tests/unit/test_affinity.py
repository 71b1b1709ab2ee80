"""The key a request is routed by: the session its client names, else its prefix."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from b3os_infer.edge.fleet.affinity import (
    PREFIX_PART_BYTES,
    RoutingKey,
    prefix_fingerprint,
    routing_key,
    user_id_session,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "claude_code_first_request.json"
SESSION = "9cf41e64-6b12-443b-9d5d-d8e403f475ff"


def _claude_code() -> dict[str, object]:
    request: dict[str, object] = json.loads(FIXTURE.read_text())["request"]
    return request


@pytest.mark.parametrize("header", ["x-claude-code-session-id", "session-id", "session_id",
                                    "x-session-id"])
def test_each_session_header_names_the_session(header):
    assert routing_key({header: "abc"}, {"messages": []}) == RoutingKey("session", "abc")


def test_the_session_id_inside_claude_codes_metadata_user_id_names_the_session():
    assert routing_key({}, _claude_code()) == RoutingKey("session", SESSION)


def test_the_older_user_id_form_with_a_session_suffix_names_the_session():
    user_id = f"user_{'ab' * 32}_account_{'1' * 8}-2222-3333-4444-{'5' * 12}_session_{SESSION}"
    assert user_id_session(user_id) == SESSION
    assert user_id_session("just-a-user") is None
    assert user_id_session('{"session_id": 7}') is None
    assert user_id_session("{not json") is None


def test_claude_codes_header_and_its_metadata_give_the_same_key():
    assert routing_key({"x-claude-code-session-id": SESSION}, _claude_code()) == \
        routing_key({}, _claude_code())


def test_a_responses_prompt_cache_key_names_the_session():
    body = {"model": "m", "input": [{"role": "user", "content": "hi"}],
            "prompt_cache_key": "thread-7"}
    assert routing_key({}, body) == RoutingKey("session", "thread-7")


def test_headers_come_before_the_body_and_the_session_before_agent_ids():
    headers = {"x-claude-code-session-id": "s", "x-claude-code-agent-id": "a",
               "x-claude-code-parent-agent-id": "p"}
    assert routing_key(headers, _claude_code()) == RoutingKey("session", "s")
    assert routing_key({"session-id": "codex"}, {"prompt_cache_key": "thread"}) == \
        RoutingKey("session", "codex")
    assert routing_key({"x-session-id": "open"}, _claude_code()) == \
        RoutingKey("session", "open")


def test_a_subagent_goes_with_its_parent():
    # Claude Code: a subagent carries its parent's agent id (and the same session id)
    parent = routing_key({"x-claude-code-agent-id": "main"}, {})
    child = routing_key({"x-claude-code-agent-id": "sub-1",
                         "x-claude-code-parent-agent-id": "main"}, {})
    assert parent == child == RoutingKey("session", "main")
    # OpenCode: a subtask is a session of its own with its parent's id beside it
    assert routing_key({"x-session-id": "child", "x-parent-session-id": "root"}, {}) == \
        routing_key({"x-session-id": "root"}, {})


def test_blank_names_are_skipped_and_no_prompt_is_no_key():
    assert routing_key({"x-session-id": "  "}, {"prompt_cache_key": ""}) is None
    assert routing_key({}, None) is None
    assert routing_key({}, {"model": "m"}) is None


def _turns(first: dict[str, object]) -> list[dict[str, object]]:
    """The first request and two later turns that append to its conversation, with the
    cache marker moved to the newest message as Claude Code moves it."""
    turns = [first]
    for n in range(2):
        later = copy.deepcopy(turns[-1])
        messages = later["messages"]
        assert isinstance(messages, list)
        for message in messages:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    block.pop("cache_control", None)
        messages.append({"role": "assistant", "content": f"reply {n}"})
        messages.append({"role": "user", "content": [
            {"type": "text", "text": f"turn {n}", "cache_control": {"type": "ephemeral"}}]})
        turns.append(later)
    return turns


def test_the_prefix_fingerprint_is_stable_across_turns_that_append_messages():
    first = _claude_code()
    del first["metadata"]
    messages = first["messages"]
    assert isinstance(messages, list)
    messages[0]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    keys = {routing_key({}, turn) for turn in _turns(first)}
    assert len(keys) == 1 and next(iter(keys)).source == "prefix"


def test_claude_codes_billing_block_with_its_per_request_nonce_does_not_change_the_fingerprint():
    first, second = _claude_code(), _claude_code()
    for body, nonce in ((first, "a1b2c"), (second, "f9e8d")):
        del body["metadata"]
        system = body["system"]
        assert isinstance(system, list) and system[0]["text"].startswith(
            "x-anthropic-billing-header:")
        system[0]["text"] = system[0]["text"].rstrip() + f" cch={nonce};"
    assert first["system"] != second["system"]
    assert routing_key({}, first) == routing_key({}, second)


def test_the_fingerprint_tells_conversations_apart_by_their_first_message():
    first, other = _claude_code(), _claude_code()
    other["messages"] = [{"role": "user", "content": "another task"}]
    assert prefix_fingerprint(first) != prefix_fingerprint(other)


def test_an_openai_chat_fingerprint_reads_past_its_system_messages_to_the_first_user_one():
    def chat(task: str, *later: dict[str, str]) -> dict[str, object]:
        return {"messages": [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": task}, *later]}

    assert prefix_fingerprint(chat("a")) != prefix_fingerprint(chat("b"))
    assert prefix_fingerprint(chat("a")) == \
        prefix_fingerprint(chat("a", {"role": "assistant", "content": "ok"}))


def test_a_completion_prompt_is_fingerprinted_by_its_head():
    head = "x" * 4096
    assert prefix_fingerprint({"prompt": head}) == prefix_fingerprint({"prompt": head + "more"})
    assert prefix_fingerprint({"prompt": "short"}) != prefix_fingerprint({"prompt": "other"})


def test_each_part_of_the_prefix_is_read_only_up_to_its_bound():
    long_system = "s" * PREFIX_PART_BYTES
    same = {"system": long_system + "tail one", "messages": [{"role": "user", "content": "q"}]}
    other = {"system": long_system + "tail two", "messages": [{"role": "user", "content": "q"}]}
    assert prefix_fingerprint(same) == prefix_fingerprint(other)
