"""Server tools on the Messages API: web_search (and web_fetch) run on the node inside the
model's turn, through a real SearXNG-compatible server on loopback, driven through the
official SDK, streamed and not."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from b3os_infer.engine.scripted.script import Reply, Script, When
from b3os_infer.node.server_tools.fetch import FetchSettings, WebFetcher
from b3os_infer.node.server_tools.searxng import SearxngBackend
from b3os_infer.node.server_tools.tool_run import ServerTools
from support.web_servers import Page, page_server, searxng_server

pytestmark = pytest.mark.anyio

SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}
FETCH_TOOL = {"type": "web_fetch_20250910", "name": "web_fetch"}
RESULTS = [
    {"url": "https://example.org/b3os", "title": "B3OS Infer 2.0 released",
     "content": "The release adds server tools.", "publishedDate": "2026-11-30"},
    {"url": "https://news.example.com/story", "title": "Local inference news",
     "content": "Another story."},
]
ASK = "search please: what is new in B3OS?"


def _call(name: str, **arguments: str) -> str:
    args = ", ".join(f'"{k}": "{v}"' for k, v in arguments.items())
    return f'<tool_call>\n{{"name": "{name}", "arguments": {{{args}}}}}\n</tool_call>'


SEARCH_THEN_ANSWER = Script(replies=(
    Reply(_call("web_search", query="b3os news"), when=When(last_user_contains="search please"),
          repeat=True),
    Reply("It added server tools.", when=When(last_user_contains="<tool_response>"),
          repeat=True),
))


async def _create(app: Any, stream: bool, **kwargs: Any) -> anthropic.types.Message:
    kwargs = {"model": app.model, "max_tokens": 300,
              "messages": [{"role": "user", "content": ASK}], "tools": [SEARCH_TOOL],
              **kwargs}
    if not stream:
        return await app.anthropic.messages.create(**kwargs)
    async with app.anthropic.messages.stream(**kwargs) as events:
        return await events.get_final_message()


def _searxng(url: str) -> ServerTools:
    return ServerTools(search=SearxngBackend(url))


def _shape(message: anthropic.types.Message) -> list[dict[str, Any]]:
    """The content without the ids minted per request."""
    blocks = [block.model_dump(exclude_none=True) for block in message.content]
    for block in blocks:
        block.pop("id", None)
        block.pop("tool_use_id", None)
    return blocks


@pytest.mark.parametrize("stream", [False, True])
async def test_a_search_runs_on_the_node_and_the_turn_continues_with_its_results(
        scripted_app, stream):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SEARCH_THEN_ANSWER, server_tools=_searxng(searxng.url))
        message = await _create(app, stream)
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result",
                                                 "text"]
    call, result, text = message.content
    assert call.name == "web_search" and call.input == {"query": "b3os news"}
    assert call.id.startswith("srvtoolu_") and result.tool_use_id == call.id
    assert [(r.url, r.title, r.page_age) for r in result.content] == [
        ("https://example.org/b3os", "B3OS Infer 2.0 released", "2026-11-30"),
        ("https://news.example.com/story", "Local inference news", None)]
    assert text.text == "It added server tools."
    assert message.stop_reason == "end_turn"
    assert message.usage.server_tool_use.web_search_requests == 1
    assert searxng.queries[0]["q"] == ["b3os news"] and searxng.queries[0]["format"] == ["json"]
    # the model read the results after its call, in the same request
    continued = app.engine.received[-1].text
    assert "The release adds server tools." in continued and "B3OS Infer 2.0" in continued


async def test_a_streamed_search_folds_into_the_message_the_plain_call_returns(scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SEARCH_THEN_ANSWER, server_tools=_searxng(searxng.url))
        plain = await _create(app, False)
        streamed = await _create(app, True)
    assert _shape(streamed) == _shape(plain)
    assert streamed.usage.model_dump() == plain.usage.model_dump()


async def test_the_stream_sends_the_call_input_as_a_delta_and_the_result_whole(scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SEARCH_THEN_ANSWER, server_tools=_searxng(searxng.url))
        async with app.anthropic.messages.stream(
                model=app.model, max_tokens=300, tools=[SEARCH_TOOL],
                messages=[{"role": "user", "content": ASK}]) as events:
            raw = [event async for event in events if event.type.startswith("content_block")
                   or event.type == "message_delta"]
    starts = [e.content_block.type for e in raw if e.type == "content_block_start"]
    assert starts == ["server_tool_use", "web_search_tool_result", "text"]
    call_start = next(e for e in raw if e.type == "content_block_start")
    assert call_start.content_block.input == {}
    deltas = [e.delta for e in raw if e.type == "content_block_delta" and e.index == 0]
    assert [d.partial_json for d in deltas] == ['{"query": "b3os news"}']
    assert not [e for e in raw if e.type == "content_block_delta" and e.index == 1]
    final = next(e for e in raw if e.type == "message_delta")
    assert final.usage.server_tool_use.web_search_requests == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_without_a_backend_the_search_fails_inside_the_reply_as_unavailable(
        scripted_app, stream):
    app = await scripted_app(SEARCH_THEN_ANSWER)
    message = await _create(app, stream)
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result",
                                                 "text"]
    error = message.content[1].content
    assert error.type == "web_search_tool_result_error"
    assert error.error_code == "unavailable"
    assert message.stop_reason == "end_turn"
    assert message.usage.server_tool_use is None     # no search was made
    assert "not available on this server" in app.engine.received[-1].text


async def test_calls_past_max_uses_get_max_uses_exceeded_and_are_not_counted(scripted_app):
    script = Script(replies=(
        Reply(_call("web_search", query="first")),
        Reply(_call("web_search", query="second")),
        Reply("Done."),
    ))
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(script, server_tools=_searxng(searxng.url))
        message = await _create(app, False, tools=[{**SEARCH_TOOL, "max_uses": 1}])
    results = [b for b in message.content if b.type == "web_search_tool_result"]
    assert isinstance(results[0].content, list)
    assert results[1].content.error_code == "max_uses_exceeded"
    assert message.usage.server_tool_use.web_search_requests == 1
    assert len(searxng.queries) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_turn_that_keeps_searching_is_paused_after_max_steps(scripted_app, stream):
    again = Reply(_call("web_search", query="more"), repeat=True)
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(again, server_tools=ServerTools(
            search=SearxngBackend(searxng.url), max_steps=3))
        message = await _create(app, stream)
    assert message.stop_reason == "pause_turn"
    assert [b.type for b in message.content].count("server_tool_use") == 3
    assert message.usage.server_tool_use.web_search_requests == 3
    assert len(app.engine.received) == 3


async def test_a_paused_turn_sent_back_as_it_is_continues(scripted_app):
    script = Script(replies=(
        Reply(_call("web_search", query="b3os news"), when=When(last_user_contains="search")),
        Reply("Here is what I found.", when=When(last_user_contains="<tool_response>")),
    ))
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(script, server_tools=ServerTools(
            search=SearxngBackend(searxng.url), max_steps=1))
        paused = await _create(app, False)
        assert paused.stop_reason == "pause_turn"
        resumed = await _create(app, False, messages=[
            {"role": "user", "content": ASK},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                              for b in paused.content]}])
    assert [b.type for b in resumed.content] == ["text"]
    assert resumed.content[0].text == "Here is what I found."
    # the results came back in the history and were rendered as the model first read them
    assert "The release adds server tools." in app.engine.received[-1].text


async def test_a_conversation_that_sends_results_back_keeps_its_prompt_prefix(scripted_app):
    script = Script(replies=(*SEARCH_THEN_ANSWER.replies,
                             Reply("You are welcome.", when=When(last_user_contains="thanks"))))
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(script, server_tools=_searxng(searxng.url))
        first = await _create(app, False)
        continued_prompt = app.engine.received[-1].text
        history = [{"role": "user", "content": ASK},
                   {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                     for b in first.content]},
                   {"role": "user", "content": "thanks"}]
        second = await _create(app, False, messages=history)
    assert second.content[0].text == "You are welcome."
    next_prompt = app.engine.received[-1].text
    # what the node rendered inside the first request's loop, up to its generation prompt,
    # is a prefix of the next one: the history renders the results as the loop did
    rendered = continued_prompt[:continued_prompt.rindex("<|im_start|>assistant")]
    assert "The release adds server tools." in rendered
    assert next_prompt.startswith(rendered)


async def test_allowed_domains_keep_only_results_from_those_domains(scripted_app):
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(SEARCH_THEN_ANSWER, server_tools=_searxng(searxng.url))
        message = await _create(app, False, tools=[{**SEARCH_TOOL,
                                                     "allowed_domains": ["example.com"]}])
    assert [r.url for r in message.content[1].content] == ["https://news.example.com/story"]
    assert searxng.queries[0]["q"] == ["b3os news site:example.com"]


async def test_allowed_and_blocked_domains_together_are_refused(scripted_app):
    app = await scripted_app(SEARCH_THEN_ANSWER)
    with pytest.raises(anthropic.BadRequestError) as refused:
        await _create(app, False, tools=[{**SEARCH_TOOL, "allowed_domains": ["a.com"],
                                          "blocked_domains": ["b.com"]}])
    assert refused.value.body["error"]["message"].startswith("tools[0].blocked_domains")


async def test_a_key_without_the_server_tools_scope_is_refused_with_403(scripted_app):
    app = await scripted_app(SEARCH_THEN_ANSWER, scopes=("infer", "models:read"))
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        await _create(app, False)
    assert refused.value.body["b3os"] == {"code": "missing_scope", "param": "tools"}
    assert not app.engine.received


async def test_a_search_backend_that_fails_gives_unavailable_and_throttling_too_many(
        scripted_app):
    for status, code in ((500, "unavailable"), (429, "too_many_requests")):
        with searxng_server(RESULTS, status=status) as searxng:
            app = await scripted_app(SEARCH_THEN_ANSWER, server_tools=_searxng(searxng.url))
            message = await _create(app, False)
        assert message.content[1].content.error_code == code


async def test_a_client_tool_beside_a_server_tool_still_comes_back_as_tool_use(scripted_app):
    read = {"name": "Read", "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    app = await scripted_app(Reply(_call("Read", path="a.txt")))
    message = await _create(app, False, tools=[SEARCH_TOOL, read])
    assert [b.type for b in message.content] == ["tool_use"]
    assert message.stop_reason == "tool_use"


HTML = b"<html><head><title>Notes</title></head><body><p>The answer is 42.</p></body></html>"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_fetch_reads_the_page_text_and_the_turn_continues(scripted_app, stream):
    with page_server({"/notes": Page(HTML)}) as pages:
        url = pages.url + "/notes"
        script = Script(replies=(
            Reply(_call("web_fetch", url=url), when=When(last_user_contains="read")),
            Reply("It says 42.", when=When(last_user_contains="The answer is 42.")),
        ))
        fetcher = WebFetcher(FetchSettings(allow_networks=("127.0.0.1/32",)))
        app = await scripted_app(script, server_tools=ServerTools(fetcher=fetcher))
        message = await _create(app, stream, tools=[FETCH_TOOL], messages=[
            {"role": "user", "content": f"read {url}"}])
    assert [b.type for b in message.content] == ["server_tool_use", "web_fetch_tool_result",
                                                 "text"]
    fetched = message.content[1].content
    assert fetched.type == "web_fetch_result" and fetched.url == url
    assert fetched.content.source.data == "The answer is 42."
    assert fetched.content.title == "Notes"
    assert message.usage.server_tool_use.web_fetch_requests == 1


async def test_a_fetch_of_a_private_address_fails_as_url_not_allowed(scripted_app):
    script = Script(replies=(Reply(_call("web_fetch", url="http://169.254.169.254/latest/")),
                             Reply("I could not read it.")))
    app = await scripted_app(script, server_tools=ServerTools(fetcher=WebFetcher()))
    message = await _create(app, False, tools=[FETCH_TOOL],
                            messages=[{"role": "user", "content": "read the metadata"}])
    assert message.content[1].content.error_code == "url_not_allowed"
    assert message.usage.server_tool_use is None


async def test_the_model_listing_says_web_search_is_supported_only_with_a_backend(
        scripted_app):
    with searxng_server(RESULTS) as searxng:
        backed = await scripted_app(Reply("x"), server_tools=_searxng(searxng.url))
        listed = await backed.anthropic.models.retrieve(backed.model)
    bare = await scripted_app(Reply("x"))
    unlisted = await bare.anthropic.models.retrieve(bare.model)
    assert listed.capabilities.server_tools.web_search.supported is True
    assert unlisted.capabilities.server_tools.web_search.supported is False


async def test_count_tokens_counts_the_server_tools_as_the_reply_renders_them(scripted_app):
    app = await scripted_app(Reply("Nothing to search."))
    counted = await app.anthropic.messages.count_tokens(
        model=app.model, tools=[SEARCH_TOOL], messages=[{"role": "user", "content": "hi"}])
    without = await app.anthropic.messages.count_tokens(
        model=app.model, messages=[{"role": "user", "content": "hi"}])
    message = await _create(app, False, messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens == message.usage.input_tokens > without.input_tokens
    assert "web_search" in app.engine.received[-1].text


@pytest.mark.parametrize("stream", [False, True])
async def test_hidden_reasoning_stays_hidden_but_the_turn_goes_on_with_it(scripted_app,
                                                                         stream):
    script = Script(replies=(
        Reply("<think>\nI must look it up.\n</think>\n\n" + _call("web_search", query="x"),
              when=When(last_user_contains="search please")),
        Reply("<think>\nFound.\n</think>\n\nDone.",
              when=When(last_user_contains="<tool_response>")),
        Reply("<think>\nPolite.\n</think>\n\nWelcome.", when=When(last_user_contains="thanks")),
    ))
    with searxng_server(RESULTS) as searxng:
        app = await scripted_app(script, server_tools=_searxng(searxng.url))
        message = await _create(app, stream, max_tokens=2000, thinking={
            "type": "enabled", "budget_tokens": 1024, "display": "omitted"})
    kinds = [b.type for b in message.content]
    assert kinds == ["thinking", "server_tool_use", "web_search_tool_result", "thinking",
                     "text"]
    assert [b.thinking for b in message.content if b.type == "thinking"] == ["", ""]
    assert all(b.signature for b in message.content if b.type == "thinking")
    # the step after the search read the reasoning before it
    assert "I must look it up." in app.engine.received[-1].text
    # and the blocks sent back as they came are accepted (the signatures verify)
    again = await _create(app, False, messages=[
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                          for b in message.content]},
        {"role": "user", "content": "thanks"}], thinking={
            "type": "enabled", "budget_tokens": 1024, "display": "omitted"}, max_tokens=2000)
    assert again.content[-1].text == "Welcome."
