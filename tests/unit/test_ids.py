import re

from b3os_infer import ids
from b3os_infer.anthropic.encode import tool_use_id
from b3os_infer.openai_api.encode import tool_call_id


def test_request_id_is_req_and_a_lowercase_ulid():
    rid = ids.request_id()
    assert re.fullmatch(r"req_[0-9a-hjkmnp-tv-z]{26}", rid)


def test_ulids_sort_by_time():
    assert ids.ulid(1_000) < ids.ulid(2_000)


def test_object_ids_have_their_prefixes():
    assert ids.message_id().startswith("msg_")
    assert ids.completion_id().startswith("chatcmpl-")


def test_a_minted_call_id_is_spelled_toolu_on_anthropic_and_call_on_openai():
    minted = ids.call_id()
    assert len(minted) == 24 and minted.isalnum()
    assert tool_use_id(minted) == "toolu_" + minted
    assert tool_call_id(minted) == "call_" + minted
