"""The readable text of an HTML page: its title and its visible text, blocks on lines."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIPPED = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
           "article", "header", "footer", "pre", "blockquote", "table", "ul", "ol", "hr"}
_SPACES = re.compile(r"[ \t\r\f\v]+")
_LINES = re.compile(r"\n\s*\n+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.text: list[str] = []
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BLOCKS:
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCKS:
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skipping:
            self.text.append(data)


def html_text(html: str) -> tuple[str | None, str]:
    """(title, text) of a page."""
    extractor = _Extractor()
    extractor.feed(html)
    extractor.close()
    title = " ".join("".join(extractor.title).split()) or None
    lines = [_SPACES.sub(" ", line).strip() for line in "".join(extractor.text).split("\n")]
    text = _LINES.sub("\n\n", "\n".join(lines)).strip()
    return title, text
