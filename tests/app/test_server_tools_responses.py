"""The web_search tool on the Responses API (as Codex declares it): run on the node through
a real SearXNG-compatible server on loopback where one is configured, as ``web_search_call``
items; left out of the prompt where none is."""

from __future__ import annotations

from typing import Any

import pytest

from b3os_infer.engine.scripted.script import Reply, Script, When
from b3os_infer.node.server_tools.searxng import SearxngBackend
from b3os_infer.node.server_tools.tool_run import ServerTools
from support.web_servers import searxng_server

pytestmark = pytest.mark.anyio

RESULTS = [{"url": "https://example.org/b3os", "title": "B3OS Infer 2.0 released",
            "content": "The release adds server tools."}]
CALL = '<tool_call>\n{"name": "web_search", "arguments": {"query": "b3os news"}}\n</tool_call>'
SCRIPT = Script(replies=(
    Reply(CALL, when=When(last_user_contains="search please"), repeat=True),
    Reply("It added server tools.", when=When(last_user_contains="<tool_response>"),
          repeat=True),
    Reply("Glad to help.", when=When(last_user_contains="thanks"), repeat=True),
))
TOOLS = [{"type": "web_search", "external_web_access": True}]


async def _create(app: Any, stream: bool, **kwargs: Any) -> Any:
    kwargs = {"model": app.model, "input": "search please: what is new?", "tools": TOOLS,
              **kwargs}
    if not stream:
        return await app.openai.responses.create(**kwargs)
    async with app.openai.responses.stream(**kwargs) as events:
        return await events.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_web_search_runs_and_comes_back_as_a_web_search_call_item(scripted_app,
                                                                          stream):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SCRIPT, server_tools=ServerTools(
            search=SearxngBackend(searxng.url)))
        response = await _create(app, stream)
    assert [item.type for item in response.output] == ["web_search_call", "message"]
    search, message = response.output
    assert search.id.startswith("ws_") and search.status == "completed"
    assert search.action.type == "search" and search.action.query == "b3os news"
    assert [s.url for s in search.action.sources] == ["https://example.org/b3os"]
    assert message.content[0].text == "It added server tools."
    assert response.status == "completed"
    assert searxng.queries[0]["q"] == ["b3os news"]
    assert "The release adds server tools." in app.engine.received[-1].text


async def test_the_stream_says_in_progress_searching_and_completed_for_the_item(scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SCRIPT, server_tools=ServerTools(
            search=SearxngBackend(searxng.url)))
        async with app.openai.responses.stream(model=app.model, tools=TOOLS,
                                               input="search please: now") as events:
            kinds = [event.type async for event in events]
    searching = [k for k in kinds if k.startswith("response.web_search_call")]
    assert searching == ["response.web_search_call.in_progress",
                         "response.web_search_call.searching",
                         "response.web_search_call.completed"]
    assert kinds.index("response.web_search_call.completed") < \
        kinds.index("response.output_text.delta")


async def test_a_response_with_a_search_can_be_continued_by_previous_response_id(
        scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SCRIPT, server_tools=ServerTools(
            search=SearxngBackend(searxng.url)))
        first = await _create(app, False)
        second = await _create(app, False, input="thanks",
                               previous_response_id=first.id)
    assert second.output[-1].content[0].text == "Glad to help."
    prompt = app.engine.received[-1].text
    assert "b3os news" in prompt and "https://example.org/b3os" in prompt


async def test_a_replayed_web_search_call_item_is_rendered_back(scripted_app):
    app = await scripted_app(SCRIPT, server_tools=ServerTools(
        search=SearxngBackend("http://127.0.0.1:9")))
    replayed = {"type": "web_search_call", "id": "ws_1", "status": "completed",
                "action": {"type": "search", "query": "older query",
                           "sources": [{"type": "url", "url": "https://old.example/"}]}}
    response = await _create(app, False, input=[
        {"role": "user", "content": "search please"}, replayed,
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Found it."}]},
        {"role": "user", "content": "thanks"}])
    assert response.output[-1].content[0].text == "Glad to help."
    assert "older query" in app.engine.received[-1].text
    assert "https://old.example/" in app.engine.received[-1].text


async def test_without_a_backend_the_web_search_tool_is_left_out_of_the_prompt(scripted_app):
    app = await scripted_app(Reply("No search here."))
    response = await _create(app, False)
    assert [item.type for item in response.output] == ["message"]
    assert "web_search" not in app.engine.received[-1].text


async def test_a_key_without_the_scope_gets_no_web_search_in_its_prompt(scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(Reply("No search for this key."), scopes=("infer",),
                                 server_tools=ServerTools(search=SearxngBackend(searxng.url)))
        response = await _create(app, False)
    assert response.output[0].content[0].text == "No search for this key."
    assert "web_search" not in app.engine.received[-1].text
    assert searxng.queries == []
