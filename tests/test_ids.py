import re

from b3os_infer import ids


def test_request_id_is_req_and_a_lowercase_ulid():
    rid = ids.request_id()
    assert re.fullmatch(r"req_[0-9a-hjkmnp-tv-z]{26}", rid)


def test_ulids_sort_by_time():
    assert ids.ulid(1_000) < ids.ulid(2_000)


def test_object_ids_have_their_prefixes():
    assert ids.message_id().startswith("msg_")
    assert ids.tool_use_id().startswith("toolu_")
    assert ids.completion_id().startswith("chatcmpl-")
