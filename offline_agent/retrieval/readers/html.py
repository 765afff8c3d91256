"""HTML pages: their main content (no page chrome, scripts or styles), titled by `<title>`, with heading sections.

What is kept and dropped is decided in `html_content.PageText`; this module feeds it the page's parse events from
lxml (libxml2's HTML parser, in C; a core dependency). Measured on the PostgreSQL and Python manuals (docs/
results/2026-11.md, "Ingestion"), pages were read 2.5x faster through lxml than through the standard library's
`html.parser` (which was most of the cost of indexing HTML), with the same text. selectolax's Lexbor was 10-20%
faster still, but takes time in the square of how deep elements nest (100,000 unclosed <span>s: a minute), where
libxml2 stops at 2,048 levels at once. Such a page, and any page where lxml cannot be imported, is read by the
standard library's parser, which takes any page in linear time; so is a page with an element of more attributes
than the `attributes` bound (libxml2 compares each attribute with all before it: 40,000 on one element took 36 s)
and one with a control character in its text (lxml refuses to write one into the tree's text where the blocks are
marked). A page longer than the `part-bytes` bound is read up to it, with a note. A page that is not UTF-8 is
read in the charset its `<meta>` or XML declaration names.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, Section, SkipFile, decode_text
from offline_agent.retrieval.readers.html_content import PageText
from offline_agent.retrieval.readers.html_tree import tree_content
from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits, past

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


# A start tag long enough to hold many attributes is a run with no "<" that long after one; the attributes of such
# a tag are then counted one by one, up to one past the bound: time linear in the page.
_LONG_RUN = "<[A-Za-z][^<]{%d,}"
_TAG_NAME = re.compile(r"<[^\s/>]+")
_ONE_ATTRIBUTE = re.compile(r"""[\s/]+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]*))?""")
_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([-\w.:]+)|<\?xml[^>]{0,200}?encoding\s*=\s*["']([-\w.:]+)""", re.I
)


def crowded(page: str, attributes: int) -> bool:
    """Whether an element of `page` has more than `attributes` attributes."""
    for run in re.finditer(_LONG_RUN % (2 * attributes), page):
        at, count = _TAG_NAME.match(page, run.start()).end(), 0  # type: ignore[union-attr]
        while count <= attributes and (found := _ONE_ATTRIBUTE.match(page, at)):
            at, count = found.end(), count + 1
        if count > attributes:
            return True
    return False


def declared_text(data: bytes, not_utf8: SkipFile) -> str:
    """The text of a page that is not UTF-8, in the charset it declares in its first 4 KB (a Latin-1 page saying
    so; Latin-1 read as Windows-1252, as browsers do); `not_utf8` raised where it declares none Python knows."""
    declared = _CHARSET.search(data[:4096])
    name = (declared.group(1) or declared.group(2)).decode("ascii") if declared else ""
    try:
        codec = codecs.lookup(name).name if name else ""
    except LookupError:
        codec = ""
    if not codec or codec.startswith("utf"):
        raise not_utf8
    return data.decode("cp1252" if codec in ("latin-1", "iso8859-1", "ascii") else codec, errors="replace")


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
    try:
        return tree_content(root)
    except ValueError:  # a control character lxml will not write into the text it marks: PageText reads the page
        return None


def html_content(
    html: str, utf8: bytes | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str, tuple[Section, ...]]:
    """(title, main text, heading sections) of an HTML page; see html_content.PageText for what is kept. `utf8`,
    where given, is `html` encoded in UTF-8 (the file's bytes, where they are that)."""
    use_lxml = _etree is not None and not crowded(html, limits.attributes)
    content = _read_lxml(html, utf8) if use_lxml else None
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
        notes = []
        if len(data) > fields.limits.part_bytes:  # cut before a tag, which is never inside a UTF-8 character
            cut = data.rfind(b"<", 0, fields.limits.part_bytes)
            data = data[: cut if cut > 0 else fields.limits.part_bytes]
            notes.append(f"read up to {past('part_bytes', fields.limits)}; the rest of the page left out")
        try:
            html, utf8 = decode_text(data), True
        except SkipFile as not_utf8:
            html, utf8 = declared_text(data, not_utf8), False
        # The file's bytes go to lxml as they are where they are the text in UTF-8 (no byte-order mark, no NUL).
        utf8 = utf8 and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) and b"\x00" not in data
        title, body, sections = html_content(html, data if utf8 else None, fields.limits)
        return [Document(doc_id, title or path.stem, body, sections=sections)], notes
