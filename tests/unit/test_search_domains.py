"""Domain filters of server tools, and how SearXNG's answers are read."""

from __future__ import annotations

import pytest

from b3os_infer.anthropic.server_blocks import snippet_of, snippet_token
from b3os_infer.core import SearchHit
from b3os_infer.node.server_tools.search import (
    SearchQuery,
    SearchUnavailable,
    allowed_host,
    filtered,
    on_domain,
)
from b3os_infer.node.server_tools.searxng import SearxngBackend, hits_of


@pytest.mark.parametrize("host,domains,expected", [
    ("example.com", ("example.com",), True),
    ("docs.example.com", ("example.com",), True),
    ("EXAMPLE.com.", ("https://example.com/blog",), True),
    ("evilexample.com", ("example.com",), False),
    ("example.com.evil.net", ("example.com",), False),
    ("example.org", ("example.com",), False),
])
def test_a_domain_matches_itself_and_its_subdomains_only(host, domains, expected):
    assert on_domain(host, domains) is expected


def test_allowed_domains_keep_and_blocked_domains_drop():
    assert allowed_host("a.example.com", ("example.com",), ())
    assert not allowed_host("other.org", ("example.com",), ())
    assert not allowed_host("ads.example.com", (), ("ads.example.com",))
    assert allowed_host("example.com", (), ("ads.example.com",))


def test_filtered_hits_are_cut_to_max_results_after_filtering():
    hits = [SearchHit(f"https://{h}/", h, "") for h in ("a.org", "b.com", "c.com", "d.com")]
    query = SearchQuery("q", max_results=2, blocked_domains=("b.com",))
    assert [h.url for h in filtered(hits, query)] == ["https://a.org/", "https://c.com/"]


def test_searxng_results_become_hits_and_unusable_entries_are_skipped():
    body = {"results": [
        {"url": "https://a.org/x", "title": "A", "content": "snippet",
         "publishedDate": "2026-01-02"},
        {"url": "javascript:alert(1)", "title": "bad"},
        {"title": "no url"},
        {"url": "https://b.org/", "content": None},
        "not an object"]}
    assert hits_of(body) == [SearchHit("https://a.org/x", "A", "snippet", "2026-01-02"),
                             SearchHit("https://b.org/", "https://b.org/", "", None)]
    with pytest.raises(SearchUnavailable):
        hits_of({"answers": []})


def test_one_allowed_domain_narrows_the_searxng_query_and_language_is_passed():
    backend = SearxngBackend("http://searx.local/", language="de-DE")
    assert backend.endpoint == "http://searx.local/search"
    assert backend.params(SearchQuery("news", allowed_domains=("https://Example.com/x",))) \
        == {"q": "news site:example.com", "format": "json", "language": "de-DE"}
    assert backend.params(SearchQuery("news", allowed_domains=("a.com", "b.com")))["q"] \
        == "news"


def test_a_snippet_token_round_trips_and_another_servers_content_reads_as_empty():
    token = snippet_token("Ünïcode snippet")
    assert snippet_of(token) == "Ünïcode snippet"
    assert snippet_of("EqQBCkgIBRABGAIiQM3x+opaque/from/elsewhere==") == ""
    assert snippet_of("b3os1.%%%") == ""
