"""Stored responses in process, through the official SDK: ``store`` keeps a response for
the key that made it (another key gets OpenAI's 404), ``previous_response_id`` continues
from it, ``GET``, ``DELETE``, ``cancel`` and ``input_items`` (paginated) answer as
OpenAI's do, and ``store: false`` keeps nothing."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import Response
from openai.types.responses.response_item import ResponseItem
from pydantic import TypeAdapter

from b3os_infer.engine.scripted.script import Reply, Script, When

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello from the script.", repeat=True)
REMEMBER = Reply("Your name is Ada.", when=When(last_user_contains="my name"))
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
CALL = Reply('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
             '</tool_call>', when=When(last_user_contains="weather"))
ANSWER = Reply("It is sunny in Paris.", when=When(last_user_contains="18 C"))
ITEMS = TypeAdapter(ResponseItem)


def other_client(app) -> openai.AsyncOpenAI:
    return app.openai.with_options(api_key=app.other_key())


async def streamed_response(app, **body) -> dict:
    """The response that ``response.completed`` (or the stream's last event) carries."""
    reply = await app.http.post("/responses", json={"model": app.model, "stream": True,
                                                    **body},
                                headers={"authorization": f"Bearer {app.key}"})
    assert reply.status_code == 200, reply.text
    last = [f for f in reply.text.split("\n\n") if f.startswith("event: ")][-1]
    return json.loads(last.split("\n", 1)[1].removeprefix("data: "))["response"]


async def test_a_stored_response_is_retrieved_as_it_was_answered_whole_and_streamed(
        scripted_app):
    app = await scripted_app(HELLO)
    whole = await app.openai.responses.create(model=app.model, input="hi",
                                              metadata={"topic": "greeting"})
    assert whole.store is True
    again = await app.openai.responses.retrieve(whole.id)
    assert again.model_dump() == whole.model_dump()
    assert again.metadata == {"topic": "greeting"}
    streamed = await streamed_response(app, input="hi")
    kept = await app.openai.responses.retrieve(streamed["id"])
    assert kept.model_dump(exclude_unset=True) == \
        Response.model_validate(streamed).model_dump(exclude_unset=True)


async def test_store_false_keeps_nothing(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi", store=False)
    assert response.store is False
    with pytest.raises(openai.NotFoundError):
        await app.openai.responses.retrieve(response.id)
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, input="more",
                                          previous_response_id=response.id)
    assert info.value.code == "previous_response_not_found"


async def test_another_key_finds_none_of_the_routes_on_a_stored_response(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi")
    other = other_client(app)
    for call in (other.responses.retrieve, other.responses.delete,
                 other.responses.cancel, other.responses.input_items.list):
        with pytest.raises(openai.NotFoundError) as info:
            await call(response.id)
        assert info.value.body["message"] == f"Response with id '{response.id}' not found."
    with pytest.raises(openai.BadRequestError) as continued:
        await other.responses.create(model=app.model, input="more",
                                     previous_response_id=response.id)
    assert (continued.value.code, continued.value.param) == (
        "previous_response_not_found", "previous_response_id")
    assert continued.value.body["message"] == \
        f"Previous response with id '{response.id}' not found."
    # the owner still has it: nothing the other key did touched it
    assert (await app.openai.responses.retrieve(response.id)).id == response.id


async def test_a_deleted_response_is_gone_for_every_route(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi")
    deleted = await app.http.delete(f"/responses/{response.id}",
                                    headers={"authorization": f"Bearer {app.key}"})
    assert deleted.status_code == 200
    assert deleted.json() == {"id": response.id, "object": "response.deleted",
                              "deleted": True}
    with pytest.raises(openai.NotFoundError):
        await app.openai.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError):
        await app.openai.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        await app.openai.responses.input_items.list(response.id)
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(model=app.model, input="more",
                                          previous_response_id=response.id)
    assert info.value.code == "previous_response_not_found"


async def test_previous_response_id_puts_the_stored_turns_before_this_input(scripted_app):
    app = await scripted_app([REMEMBER, HELLO])
    first = await app.openai.responses.create(
        model=app.model, input="Hi, I am Ada.", instructions="Be brief and kind.")
    second = await app.openai.responses.create(
        model=app.model, input="What is my name?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert second.output_text == "Your name is Ada."
    prompt = app.engine.received[-1].text
    assert prompt.index("Hi, I am Ada.") < prompt.index("Hello from the script.") \
        < prompt.index("What is my name?")
    assert "Be brief and kind." not in prompt        # instructions do not carry over
    items = [i async for i in app.openai.responses.input_items.list(second.id,
                                                                    order="asc")]
    assert [(i.type, getattr(i, "role", None)) for i in items] == [
        ("message", "user"), ("message", "assistant"), ("message", "user")]
    counted = await app.openai.responses.input_tokens.count(
        model=app.model, input="What is my name?", previous_response_id=first.id)
    assert second.usage is not None
    assert counted.input_tokens == second.usage.input_tokens


async def test_a_function_call_is_answered_with_only_its_output_and_the_previous_id(
        scripted_app):
    app = await scripted_app([CALL, ANSWER])
    first = await app.openai.responses.create(model=app.model, tools=[WEATHER],
                                              input="What is the weather in Paris?")
    call = first.output[-1]
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Paris"}
    second = await app.openai.responses.create(
        model=app.model, tools=[WEATHER], previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": "18 C and sunny"}])
    assert second.output_text == "It is sunny in Paris."
    # an output that answers no call of the stored turns is still refused
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.create(
            model=app.model, tools=[WEATHER], previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": "call_nope", "output": "1"}])
    assert info.value.param == "input[0]"


async def test_input_items_are_sdk_items_paged_newest_first_by_default(scripted_app):
    app = await scripted_app(HELLO)
    given = [{"role": "developer", "content": "Be brief."},
             *({"role": "user", "content": f"turn {i}"} for i in range(4))]
    response = await app.openai.responses.create(model=app.model, input=given)
    page = await app.openai.responses.input_items.list(response.id, limit=2)
    assert [i.content[0].text for i in page.data] == ["turn 3", "turn 2"]
    assert page.has_more is True
    raw = page.model_dump()
    assert raw["first_id"] == page.data[0].id and raw["last_id"] == page.data[1].id
    rest = await app.openai.responses.input_items.list(response.id, limit=2,
                                                       after=page.data[-1].id)
    assert [i.content[0].text for i in rest.data] == ["turn 1", "turn 0"]
    assert rest.has_more is True
    every = [i async for i in app.openai.responses.input_items.list(response.id,
                                                                    order="asc")]
    assert [i.role for i in every] == ["developer", "user", "user", "user", "user"]
    assert len({i.id for i in every}) == 5
    assert all(i.id.startswith("msg_") and i.status == "completed" for i in every)
    for item in every:
        ITEMS.validate_python(item.model_dump(exclude_unset=True))


async def test_input_items_of_tool_turns_validate_against_the_sdk_items(scripted_app):
    app = await scripted_app([CALL, ANSWER])
    first = await app.openai.responses.create(model=app.model, tools=[WEATHER],
                                              input="What is the weather in Paris?")
    call = first.output[-1]
    second = await app.openai.responses.create(
        model=app.model, tools=[WEATHER], previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": "18 C and sunny"}])
    reply = await app.http.get(f"/responses/{second.id}/input_items?order=asc",
                               headers={"authorization": f"Bearer {app.key}"})
    items = reply.json()["data"]
    assert [i["type"] for i in items] == ["message", "function_call",
                                          "function_call_output"]
    assert items[1]["id"] == call.id and items[2]["call_id"] == call.call_id
    for item in items:
        ITEMS.validate_python(item)


@pytest.mark.parametrize("query, param", [("limit=0", "limit"), ("limit=101", "limit"),
                                          ("order=up", "order")])
async def test_bad_input_items_queries_are_bad_requests_naming_the_parameter(
        scripted_app, query, param):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi")
    reply = await app.http.get(f"/responses/{response.id}/input_items?{query}",
                               headers={"authorization": f"Bearer {app.key}"})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == param


async def test_cancel_answers_that_a_response_that_was_not_background_cannot_be(
        scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi")
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.cancel(response.id)
    assert info.value.body["message"] == "Cannot cancel a synchronous response."
    with pytest.raises(openai.NotFoundError):
        await app.openai.responses.cancel("resp_unknown")
    with pytest.raises(openai.BadRequestError) as background:
        await app.openai.responses.create(model=app.model, input="hi", background=True)
    assert background.value.code == "unsupported_parameter"


async def test_retrieving_as_a_stream_is_refused_naming_stream(scripted_app):
    app = await scripted_app(HELLO)
    response = await app.openai.responses.create(model=app.model, input="hi")
    with pytest.raises(openai.BadRequestError) as info:
        await app.openai.responses.retrieve(response.id, stream=True)
    assert (info.value.param, info.value.code) == ("stream", "unsupported_parameter")


async def test_a_failed_stream_is_kept_failed(scripted_app):
    app = await scripted_app(Script(replies=(HELLO,), context_window=64))
    failed = await streamed_response(app, input="word " * 100)
    assert failed["status"] == "failed"
    kept = await app.openai.responses.retrieve(failed["id"])
    assert kept.status == "failed" and kept.error is not None
    assert kept.error.code == "context_length_exceeded"
