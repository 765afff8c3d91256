"""HTML pages: their visible text (no tags, scripts or styles), titled by <title> or the first <h1>."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from offline_agent.retrieval.readers.base import Document, Fields, decode_text


class _HTMLText(HTMLParser):
    _SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
    _HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
    _BLOCK = _HEADINGS | {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header"}
    _BLOCK |= {"footer", "blockquote", "pre", "hr", "dd", "dt", "nav", "aside", "main", "figure"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self._skip = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self._in_h1 = True
        if tag in self._BLOCK:
            self.parts.append("\n\n" if tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6") else "\n")

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False
        if tag == "h1":
            self._in_h1 = False
        if tag in self._BLOCK:
            self.parts.append("\n\n" if tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6") else "\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._skip:
            return
        if self._in_h1:
            self.h1_parts.append(data)
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, visible text) of an HTML page: no tags, scripts or styles; blank lines between paragraphs."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" ?\n ?", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join("".join(parser.title_parts).split()) or " ".join("".join(parser.h1_parts).split())
    return title, text


class HTMLReader:
    """`.html`, `.htm`, `.xhtml`: the page's visible text with the standard library's parser (no layout)."""

    name = "html"
    extensions = frozenset({".html", ".htm", ".xhtml"})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        title, body = html_to_text(decode_text(data))
        return [Document(doc_id, title or path.stem, body)], []
