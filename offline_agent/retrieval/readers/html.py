"""HTML pages: their main content (no page chrome, scripts or styles), titled by `<title>`, with heading sections.

What is kept and dropped is decided in `html_content.PageText`; this module feeds it the page's parse events from
lxml (libxml2's HTML parser, in C; a core dependency). Measured on the PostgreSQL and Python manuals (docs/
results/2026-11.md, "Ingestion"), pages were read 2.5x faster through lxml than through the standard library's
`html.parser` (which was most of the cost of indexing HTML), with the same text. selectolax's Lexbor was 10-20%
faster still, but takes time in the square of how deep elements nest (100,000 unclosed <span>s: a minute), where
libxml2 stops at 2,048 levels at once. Such a page, and any page where lxml cannot be imported, is read by the
standard library's parser, which takes any page in linear time.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, Section, decode_text
from offline_agent.retrieval.readers.html_content import PageText
from offline_agent.retrieval.readers.html_tree import tree_content

try:
    from lxml import etree as _etree
except ImportError:  # pragma: no cover - lxml is a core dependency; without it HTML is read 2.5x slower
    _etree = None


class _StdlibEvents(HTMLParser):
    """Feeds `PageText` from the standard library's tokenizer."""

    def __init__(self, page: PageText) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.start(tag, dict(attrs).get)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.start(tag, dict(attrs).get)
        self.page.end(tag)

    def handle_endtag(self, tag: str) -> None:
        self.page.end(tag)

    def handle_data(self, data: str) -> None:
        self.page.data(data)


def _read_stdlib(html: str) -> PageText:
    page = PageText()
    parser = _StdlibEvents(page)
    parser.feed(html)
    parser.close()
    return page


def _read_lxml(html: str, utf8: bytes | None = None) -> tuple[str, str, tuple[Section, ...]] | None:
    """(title, text, sections) of the page read with lxml, or None where lxml did not read all of it or the page
    holds html_content's marker character (the caller then uses the fallback). `utf8`: the page's bytes where they
    are `html` in UTF-8 with no NUL, which saves encoding it again."""
    parser = _etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)
    if utf8 is None:
        utf8 = html.replace("\x00", "").encode("utf-8", "surrogatepass")
    try:
        root = _etree.fromstring(utf8, parser)
    except (_etree.Error, ValueError):
        return None
    if any("depth" in str(error.message).lower() for error in parser.error_log):
        return None  # libxml2 stopped at its nesting limit, and what follows was not read
    if root is None:
        return "", "", ()
    return tree_content(root)


def html_content(html: str, utf8: bytes | None = None) -> tuple[str, str, tuple[Section, ...]]:
    """(title, main text, heading sections) of an HTML page; see html_content.PageText for what is kept. `utf8`,
    where given, is `html` encoded in UTF-8 (the file's bytes, where they are that)."""
    content = _read_lxml(html, utf8) if _etree is not None else None
    return content if content is not None else _read_stdlib(html).result()


def html_to_text(html: str) -> tuple[str, str]:
    """(title, main text) of an HTML page: no chrome, tags, scripts or styles; blank lines between blocks."""
    title, text, _ = html_content(html)
    return title, text


class HTMLReader:
    """`.html`, `.htm`, `.xhtml`: the page's main content, with a section for each heading."""

    name = "html"
    extensions = frozenset({".html", ".htm", ".xhtml"})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        html = decode_text(data)
        # The file's bytes go to lxml as they are where they are the text in UTF-8 (no byte-order mark, no NUL).
        plain = not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) and b"\x00" not in data
        title, body, sections = html_content(html, data if plain else None)
        return [Document(doc_id, title or path.stem, body, sections=sections)], []
