"""Input items as they are kept and listed: every kind the route accepts becomes an SDK
``ResponseItem`` with an id and a status, and a stored response reads back as the input
items of the next turn."""

from __future__ import annotations

from typing import Any

from openai.types.responses.response_item import ResponseItem
from pydantic import TypeAdapter

from b3os_infer.http.stored_responses import StoredResponse
from b3os_infer.openai_api.responses.decode import decode_params
from b3os_infer.openai_api.responses.items import context_of, listed_items
from b3os_infer.openai_api.wire.response_items import (
    EasyInputMessageParam,
    ResponseReasoningItemParam,
)

SDK_ITEM = TypeAdapter(ResponseItem)
EVERY_KIND: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": [{"type": "input_text", "text": "Patch it."}]},
    {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text",
                                                      "text": "Use the tool."}]},
    {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
    {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
    {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}",
     "id": "fc_given"},
    {"type": "function_call_output", "call_id": "c2",
     "output": [{"type": "input_text", "text": "a.txt"}]},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
]


def test_every_accepted_item_is_listed_as_an_sdk_item_with_an_id_and_a_status():
    params = decode_params({"model": "m", "input": EVERY_KIND})
    listed = listed_items(params.input)
    assert [i["type"] for i in listed] == [i.get("type", "message") for i in EVERY_KIND]
    for item in listed:
        SDK_ITEM.validate_python(item)
        assert item["id"] and item["status"] == "completed"
    assert listed[5]["id"] == "fc_given"            # an id the client gave is kept
    assert listed[6]["output"] == [{"type": "input_text", "text": "a.txt"}]


def test_a_string_input_is_listed_as_one_user_message():
    (item,) = listed_items("hi")
    assert (item["role"], item["content"]) == ("user", [{"type": "input_text", "text": "hi"}])


def test_a_stored_response_reads_back_as_its_items_then_its_output_without_seals():
    stored = StoredResponse(id="resp_1", model="m", items=listed_items("hi"), body={
        "output": [{"type": "reasoning", "id": "rs_1", "summary": [], "status": "completed",
                    "content": [{"type": "reasoning_text", "text": "Think."}],
                    "encrypted_content": "sealed"},
                   {"type": "message", "id": "msg_2", "role": "assistant",
                    "status": "completed", "content": [{"type": "output_text",
                                                        "text": "Hello.", "annotations": []}]}]})
    user, reasoning, reply = context_of(stored)
    assert isinstance(user, EasyInputMessageParam) and user.role == "user"
    assert isinstance(reasoning, ResponseReasoningItemParam)
    assert reasoning.encrypted_content is None and reasoning.content is not None
    assert reasoning.content[0].text == "Think."
    assert isinstance(reply, EasyInputMessageParam) and reply.role == "assistant"
