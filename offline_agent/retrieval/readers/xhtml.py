"""An (X)HTML page added to an `OutlineText`: its blocks of text, and a section at each h1-h6 heading.

Used for the chapters of an EPUB book, where the headings inside a chapter give a passage its place. Parsed
with lxml's forgiving HTML parser (lxml comes with ebooklib): a chapter file that is not well-formed XML, or
uses HTML entities, still reads. Scripts, styles and the head are left out; line breaks inside a paragraph of
the source are spaces, `<br>` and `<pre>` keep theirs.
"""

from __future__ import annotations

import re
from typing import Any

from offline_agent.retrieval.readers.outline import OutlineText

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_START_TAG = re.compile(r"<([A-Za-z][\w:.-]*)")
_SKIP = {"script", "style", "head", "template", "noscript", "svg", "iframe", "object"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "blockquote", "pre", "section", "hr"}
_BLOCKS |= {"article", "header", "footer", "aside", "nav", "main", "figure", "figcaption", "body", "caption"}
_CELLS = {"td", "th"}
_SHAPING = _SKIP | _HEADINGS.keys() | _BLOCKS | _CELLS | {"br"}


def add_xhtml(content: bytes, outline: OutlineText) -> None:
    """Add the text of the page `content` (bytes as stored) to `outline`."""
    from lxml import etree

    try:
        source: str | bytes = _XML_DECLARATION.sub("", content.decode("utf-8"), count=1)
    except UnicodeDecodeError:
        source = content  # let lxml read the declared encoding
    root = etree.fromstring(source, etree.HTMLParser()) if source.strip() else None
    if root is None:  # an empty page
        return
    body = root.find("body")
    body = body if body is not None else root
    # Inline markup (spans, links, emphasis, MathML's hundreds of thousands of elements in a mathematics book)
    # only carries text: merging it into its parent in C leaves the walk below the few elements that shape it.
    text = source if isinstance(source, str) else source.decode("latin-1")
    inline = {tag.lower() for tag in _START_TAG.findall(text)} - _SHAPING
    if inline:
        etree.strip_tags(body, *inline)
    _PageWalk(outline).walk(body, preformatted=False)


def _name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


class _PageWalk:
    def __init__(self, outline: OutlineText) -> None:
        self.outline = outline
        self.buffer: list[str] = []

    def flush(self) -> None:
        lines = (" ".join(line.split()) for line in "".join(self.buffer).split("\n"))
        self.outline.paragraph("\n".join(line for line in lines if line))
        self.buffer.clear()

    def add(self, text: str | None, preformatted: bool) -> None:
        if text:
            self.buffer.append(text if preformatted else text.replace("\n", " "))

    def walk(self, element: Any, preformatted: bool) -> None:
        tag = _name(element.tag) if isinstance(element.tag, str) else ""
        if tag in _SKIP or not isinstance(element.tag, str):  # comments and processing instructions too
            self.add(element.tail, preformatted)
            return
        if tag in _HEADINGS:
            self.flush()
            self.outline.heading(_HEADINGS[tag], "".join(element.itertext()))
            self.add(element.tail, preformatted)
            return
        block = tag in _BLOCKS
        if block:
            self.flush()
        elif tag == "br":
            self.buffer.append("\n")
        elif tag in _CELLS and self.buffer:
            self.buffer.append(" | ")
        inner = preformatted or tag == "pre"
        self.add(element.text, inner)
        for child in element:
            self.walk(child, inner)
        if block:
            self.flush()
        self.add(element.tail, preformatted)
