"""Server tools in the real server (``b3os-infer serve`` on the scripted engine), driven by
the official Anthropic SDK: a search through a SearXNG-compatible server on loopback, then
a fetch of a page served from a network namespace of its own (tests/support/netns.py),
all in one request, streamed and not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from support.netns import NamespacedServer, available, netns_web_server
from support.scripted_server import MODEL, ScriptedServer, scripted_server
from support.web_servers import searxng_server

PAGE = ("<html><head><title>Field notes</title></head><body><nav>menu</nav>"
        "<p>The secret word is <b>heliotrope</b>.</p><script>x()</script></body></html>")


@pytest.fixture
def namespaced(tmp_path: Path) -> Iterator[NamespacedServer]:
    why = available()
    if why is not None:
        pytest.skip(why)
    with netns_web_server({"/notes": PAGE}, tmp_path / "ns-requests.log") as served:
        yield served


def _call(name: str, key: str, value: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {{"{key}": "{value}"}}}}\n</tool_call>'


def _server(tmp_path: Path, searxng_url: str, namespaced: NamespacedServer,
            networks: str) -> ScriptedServer:
    replies = [
        {"text": _call("web_search", "query", "field notes"),
         "when": {"last_user_contains": "find the word"}, "repeat": True},
        {"text": _call("web_fetch", "url", namespaced.url + "/notes"),
         "when": {"last_user_contains": "Field notes index"}, "repeat": True},
        {"text": "The word is heliotrope.", "when": {"last_user_contains": "heliotrope"},
         "repeat": True},
        {"text": "I could not read the page.", "when": {"last_user_contains": "Fetching"},
         "repeat": True},
    ]
    toml = (f'[web_search]\nbackend = "searxng"\nurl = "{searxng_url}"\n'
            f'[web_fetch]\nenabled = true\nallow_networks = [{networks}]\n')
    return scripted_server(tmp_path / "server", replies, toml=toml)


def _ask(client: anthropic.Anthropic, stream: bool) -> anthropic.types.Message:
    kwargs = {"model": MODEL, "max_tokens": 400,
              "messages": [{"role": "user", "content": "find the word in the notes"}],
              "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                        {"type": "web_fetch_20250910", "name": "web_fetch"}]}
    if not stream:
        return client.messages.create(**kwargs)  # type: ignore[arg-type]
    with client.messages.stream(**kwargs) as events:  # type: ignore[arg-type]
        return events.get_final_message()


def test_a_search_then_a_fetch_from_another_namespace_run_in_one_request(tmp_path,
                                                                          namespaced):
    results = [{"url": namespaced.url + "/notes", "title": "Field notes index",
                "content": "Notes from the field."}]
    with searxng_server(results) as searxng:
        server = _server(tmp_path, searxng.url, namespaced, f'"{namespaced.network}"').start()
        try:
            client = anthropic.Anthropic(api_key=server.new_key(), base_url=server.base_url,
                                         max_retries=0)
            messages = [_ask(client, stream) for stream in (False, True)]
        finally:
            server.stop()
    for message in messages:
        assert [b.type for b in message.content] == [
            "server_tool_use", "web_search_tool_result", "server_tool_use",
            "web_fetch_tool_result", "text"]
        fetched = message.content[3].content
        assert fetched.type == "web_fetch_result"
        assert fetched.content.title == "Field notes"
        assert fetched.content.source.data == "menu\nThe secret word is heliotrope."
        assert message.content[4].text == "The word is heliotrope."
        usage = message.usage.server_tool_use
        assert (usage.web_search_requests, usage.web_fetch_requests) == (1, 1)
    # the page was fetched over the veth pair, once per request, by its address
    assert namespaced.requests() == [f"{namespaced.address}:8080 /notes"] * 2
    assert [q["q"] for q in searxng.queries] == [["field notes"]] * 2


def test_without_the_operators_allowance_the_private_page_is_never_requested(tmp_path,
                                                                             namespaced):
    results = [{"url": namespaced.url + "/notes", "title": "Field notes index",
                "content": "Notes from the field."}]
    with searxng_server(results) as searxng:
        server = _server(tmp_path, searxng.url, namespaced, "").start()
        try:
            client = anthropic.Anthropic(api_key=server.new_key(), base_url=server.base_url,
                                         max_retries=0)
            message = _ask(client, False)
        finally:
            server.stop()
    assert message.content[3].content.error_code == "url_not_allowed"
    assert message.content[4].text == "I could not read the page."
    assert namespaced.requests() == []
