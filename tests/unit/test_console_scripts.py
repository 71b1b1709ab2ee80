"""The console's page and scripts never turn data into markup: no HTML parsing sinks, no
inline script or handler for the CSP to refuse, no key in a cookie or a URL."""

from __future__ import annotations

import re

from b3os_infer.console.serve import load_files

SINKS = re.compile(r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|"
                   r"new Function|setAttribute\(\s*[\"']style")


def test_no_script_uses_an_html_parsing_sink_or_eval() -> None:
    scripts = {n: c.decode() for n, (c, _) in load_files().items() if n.endswith(".js")}
    assert len(scripts) >= 8
    for name, source in scripts.items():
        assert not SINKS.search(source), f"{name}: {SINKS.search(source)}"


def test_the_page_has_no_inline_script_or_handler() -> None:
    page = load_files()["index.html"][0].decode()
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts and all('src="/console/' in tag for tag in scripts)
    assert re.search(r"<script\b[^>]*>\s*[^<\s]", page) is None   # nothing inside a script
    assert re.search(r"\son[a-z]+=", page) is None
    assert "style=" not in page


def test_the_key_lives_in_session_storage_only() -> None:
    sources = "".join(c.decode() for n, (c, _) in load_files().items() if n.endswith(".js"))
    assert "sessionStorage" in sources
    assert "localStorage" not in sources and "document.cookie" not in sources
    assert 'credentials: "omit"' in sources
