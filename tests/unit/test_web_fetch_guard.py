"""web_fetch's address guard and fetcher: only public addresses, checked after DNS and on
every redirect, the connection made to the checked address, bounded in size and time."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from b3os_infer.node.server_tools.addresses import Address, AddressGuard, AddressRefused, is_public
from b3os_infer.node.server_tools.fetch import FetchSettings, WebFetcher
from support.web_servers import Page, page_server, text_pdf

pytestmark = pytest.mark.anyio

REFUSED = ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
           "100.64.0.1", "100.100.100.200", "0.0.0.0", "224.0.0.1", "192.0.2.10",
           "198.18.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1",
           "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
           "2002:7f00:1::1", "2001:db8::1", "ff02::1"]
PUBLIC = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111",
          "::ffff:8.8.8.8"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public(ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_permitted(address: str) -> None:
    assert is_public(ip_address(address))


def _resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[Address]:
        return [ip_address(a) for a in table[host]]
    return resolve


async def test_a_name_with_one_private_answer_among_public_ones_is_refused() -> None:
    guard = AddressGuard(resolver=_resolver({"mixed.test": ["8.8.8.8", "10.0.0.1"]}))
    with pytest.raises(AddressRefused, match="10.0.0.1"):
        await guard.check("mixed.test", 80)


async def test_operator_networks_are_permitted_and_nothing_else_private() -> None:
    guard = AddressGuard(("127.0.0.1/32",))
    assert guard.permits(ip_address("127.0.0.1"))
    assert not guard.permits(ip_address("127.0.0.2"))
    assert not guard.permits(ip_address("10.0.0.1"))


async def test_loopback_pages_are_refused_without_an_operator_allowance() -> None:
    with page_server({"/": Page(b"<p>secret</p>")}) as served:
        outcome = await WebFetcher().fetch(served.url + "/")
    assert outcome.error == "url_not_allowed"
    assert served.hosts == []        # never connected


def _fetcher(**settings: object) -> WebFetcher:
    return WebFetcher(FetchSettings(allow_networks=("127.0.0.1/32",), **settings))  # type: ignore[arg-type]


HTML = (b"<html><head><title>The Page</title><style>p{}</style></head><body><h1>Hello"
        b"</h1><script>alert(1)</script><p>First &amp; second.</p><p>Third</p></body></html>")


async def test_an_html_page_comes_back_as_its_title_and_visible_text() -> None:
    with page_server({"/page": Page(HTML)}) as served:
        outcome = await _fetcher().fetch(served.url + "/page")
    assert outcome.error is None
    assert outcome.title == "The Page"
    assert outcome.text == "Hello\n\nFirst & second.\n\nThird"
    assert outcome.retrieved_at is not None


async def test_the_connection_goes_to_the_checked_address_with_the_name_as_host() -> None:
    # "public.test" exists in no DNS: the page is reached only through the address the
    # guard checked, and the server still sees the name the model asked for
    with page_server({"/": Page(b"plain text", "text/plain")}) as served:
        port = int(served.url.rsplit(":", 1)[1])
        guard = AddressGuard(("127.0.0.1/32",), _resolver({"public.test": ["127.0.0.1"]}))
        outcome = await WebFetcher(guard=guard).fetch(f"http://public.test:{port}/")
    assert outcome.text == "plain text"
    assert served.hosts == [f"public.test:{port}"]


async def test_a_redirect_to_a_private_address_is_refused_before_connecting() -> None:
    with page_server({"/go": Page(status=302, location="http://10.255.0.1/admin")}) as served:
        outcome = await _fetcher().fetch(served.url + "/go")
    assert outcome.error == "url_not_allowed"
    assert outcome.url == served.url + "/go"


async def test_redirects_are_followed_each_one_checked() -> None:
    pages = {"/a": Page(status=301, location="/b"), "/b": Page(b"<p>landed</p>")}
    with page_server(pages) as served:
        outcome = await _fetcher().fetch(served.url + "/a")
    assert outcome.text == "landed"
    assert len(served.hosts) == 2


async def test_a_redirect_loop_ends_as_not_accessible() -> None:
    with page_server({"/loop": Page(status=302, location="/loop")}) as served:
        outcome = await _fetcher(max_redirects=3).fetch(served.url + "/loop")
    assert outcome.error == "url_not_accessible"
    assert len(served.hosts) == 4


async def test_a_long_body_is_cut_at_max_bytes() -> None:
    with page_server({"/big": Page(b"x" * 10_000, "text/plain")}) as served:
        outcome = await _fetcher(max_bytes=1000).fetch(served.url + "/big")
    assert outcome.text == "x" * 1000


async def test_a_slow_page_ends_as_not_accessible_at_the_timeout() -> None:
    with page_server({"/slow": Page(b"late", "text/plain", delay_s=2.0)}) as served:
        outcome = await _fetcher(timeout_s=0.3).fetch(served.url + "/slow")
    assert outcome.error == "url_not_accessible"


async def test_a_pdf_comes_back_as_its_text_and_title() -> None:
    pdf = text_pdf("The answer is 42.", "Report")
    with page_server({"/doc.pdf": Page(pdf, "application/pdf")}) as served:
        outcome = await _fetcher().fetch(served.url + "/doc.pdf")
    assert outcome.error is None
    assert (outcome.title, outcome.text) == ("Report", "The answer is 42.")


async def test_other_schemes_and_unreadable_kinds_are_refused() -> None:
    pages = {"/broken.pdf": Page(b"%PDF-1.4 not really", "application/pdf"),
             "/image.png": Page(b"\x89PNG", "image/png")}
    with page_server(pages) as served:
        broken = await _fetcher().fetch(served.url + "/broken.pdf")
        image = await _fetcher().fetch(served.url + "/image.png")
    assert broken.error == image.error == "unsupported_content_type"
    assert (await _fetcher().fetch("file:///etc/passwd")).error == "url_not_allowed"
    assert (await _fetcher().fetch("ftp://example.com/x")).error == "url_not_allowed"


async def test_a_missing_page_is_not_accessible() -> None:
    with page_server({}) as served:
        outcome = await _fetcher().fetch(served.url + "/nothing")
    assert outcome.error == "url_not_accessible"
