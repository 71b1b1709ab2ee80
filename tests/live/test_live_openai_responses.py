"""The Responses API through the official Python SDK against the live server and its real
model: create and stream (every event valid against the SDK's types, the stream's
accumulated response equal to the whole one), parse into a pydantic model, a function
tool round trip continued by ``previous_response_id``, and the stored response's routes."""

from __future__ import annotations

import json
from typing import get_args

import httpx
import openai
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import BaseModel, Field

MODEL = "b3os/smollm2-135m-instruct"
ASK = {"model": MODEL, "input": "Name one river in Oregon.", "instructions": "Be brief.",
       "max_output_tokens": 400, "temperature": 0}
SDK_EVENTS = {get_args(c.model_fields["type"].annotation)[0]: c
              for c in get_args(get_args(ResponseStreamEvent)[0])}
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather in a city",
           "parameters": {"type": "object", "additionalProperties": False,
                          "properties": {"city": {"type": "string", "maxLength": 30}},
                          "required": ["city"]}}


class River(BaseModel):
    name: str = Field(max_length=30)
    state: str = Field(max_length=20)


def without_ids(response: dict) -> dict:
    """A response without what differs between two calls: ids and times."""
    response = {k: v for k, v in response.items() if k not in ("id", "created_at")}
    response["output"] = [{k: v for k, v in item.items() if k != "id"}
                          for item in response["output"]]
    return response


def test_the_streamed_response_equals_the_whole_one_and_each_event_is_an_sdk_event(
        live, openai_client):
    openai_client.responses.create(**ASK)       # both compared calls reuse the cached prompt
    whole = openai_client.responses.create(**ASK)
    with openai_client.responses.stream(**ASK) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_response()
    assert whole.status == streamed.status == "completed"
    assert whole.output_text == streamed.output_text and whole.output_text
    assert without_ids(streamed.model_dump(exclude_none=True)) == \
        without_ids(whole.model_dump(exclude_none=True))
    with httpx.stream("POST", live.base_url + "/responses", json={**ASK, "stream": True},
                      headers={"authorization": f"Bearer {live.key}"}, timeout=60) as raw:
        events = [json.loads(line.removeprefix("data: ")) for line in raw.iter_lines()
                  if line.startswith("data: ")]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    for event in events:
        SDK_EVENTS[event["type"]].model_validate(event)
    assert events[-1]["type"] == "response.completed"


def test_parse_fills_a_pydantic_model(openai_client):
    parsed = openai_client.responses.parse(
        model=MODEL, input="Name one river in Oregon and its state.", text_format=River,
        max_output_tokens=80, temperature=0)
    assert parsed.status == "completed"
    assert isinstance(parsed.output_parsed, River) and parsed.output_parsed.name


def test_a_function_call_answered_through_previous_response_id(openai_client):
    first = openai_client.responses.create(
        model=MODEL, input="What is the weather in Paris?", tools=[WEATHER],
        tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=60,
        temperature=0, parallel_tool_calls=False)
    (call,) = first.output      # parallel_tool_calls false: one call
    assert call.type == "function_call" and call.name == "get_weather"
    assert isinstance(json.loads(call.arguments)["city"], str)
    second = openai_client.responses.create(
        model=MODEL, previous_response_id=first.id, tools=[WEATHER], max_output_tokens=30,
        temperature=0, tool_choice="none",
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": "18 C and sunny"}])
    assert second.previous_response_id == first.id and second.status in (
        "completed", "incomplete")
    assert second.output_text
    items = list(openai_client.responses.input_items.list(second.id, order="asc"))
    assert [i.type for i in items] == ["message", "function_call", "function_call_output"]
    assert items[1].call_id == call.call_id


def test_a_stored_response_is_retrieved_listed_and_deleted(openai_client):
    made = openai_client.responses.create(**ASK)
    assert openai_client.responses.retrieve(made.id).model_dump() == made.model_dump()
    items = openai_client.responses.input_items.list(made.id)
    assert [(i.type, i.role) for i in items.data] == [("message", "user")]
    openai_client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        openai_client.responses.retrieve(made.id)
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.responses.create(**ASK, previous_response_id=made.id)
    assert info.value.code == "previous_response_not_found"
