"""An (X)HTML page added to an `OutlineText`: its blocks of text, and a section at each h1-h6 heading.

Used for the chapters of an EPUB book, where the headings inside a chapter give a passage its place. Parsed
with lxml's forgiving HTML parser (lxml comes with ebooklib): a chapter file that is not well-formed XML, or
uses HTML entities, still reads. Scripts, styles and the head are left out; line breaks inside a paragraph of
the source are spaces, `<br>` and `<pre>` keep theirs.

The page's elements are walked as start, text and end events (`PageWalk`), never by recursion, so that no depth
is too deep for Python; elements nested deeper than the `depth` bound add their text to the block at the bound
(flattened, never dropped). A page nested deeper than libxml2 goes (2,048 levels), or with an element crowded
past the `attributes` bound (libxml2's time grows with their square), is read by the standard library's
tokenizer instead, which feeds the same walk in linear time.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from offline_agent.retrieval.readers.html import crowded
from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits
from offline_agent.retrieval.readers.outline import OutlineText

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_START_TAG = re.compile(r"<([A-Za-z][\w:.-]*)")
_SKIP = {"script", "style", "head", "template", "noscript", "svg", "iframe", "object"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "blockquote", "pre", "section", "hr"}
_BLOCKS |= {"article", "header", "footer", "aside", "nav", "main", "figure", "figcaption", "body", "caption"}
_CELLS = {"td", "th"}
_SHAPING = _SKIP | _HEADINGS.keys() | _BLOCKS | _CELLS | {"br"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


def add_xhtml(content: bytes, outline: OutlineText, limits: ReadLimits = DEFAULT_LIMITS) -> None:
    """Add the text of the page `content` (bytes as stored) to `outline`."""
    from lxml import etree

    try:
        source: str | bytes = _XML_DECLARATION.sub("", content.decode("utf-8"), count=1)
    except UnicodeDecodeError:
        source = content  # let lxml read the declared encoding
    if not source.strip():  # an empty page
        return
    text = source if isinstance(source, str) else source.decode("latin-1")
    if crowded(text, limits.attributes):
        _tokenize(text, PageWalk(outline, limits.depth))
        return
    parser = etree.HTMLParser(huge_tree=True)
    root = etree.fromstring(source, parser)
    if any("depth" in str(error.message).lower() for error in parser.error_log):
        _tokenize(text, PageWalk(outline, limits.depth))  # libxml2 stopped at its nesting limit
        return
    if root is None:
        return
    body = root.find("body")
    body = body if body is not None else root
    # Inline markup (spans, links, emphasis, MathML's hundreds of thousands of elements in a mathematics book)
    # only carries text: merging it into its parent in C leaves the walk below the few elements that shape it.
    inline = {tag.lower() for tag in _START_TAG.findall(text)} - _SHAPING
    if inline:
        etree.strip_tags(body, *inline)
    etree.strip_elements(body, etree.Comment, etree.ProcessingInstruction, with_tail=False)  # their tails stay
    walk = PageWalk(outline, limits.depth)
    for event, element in etree.iterwalk(body, events=("start", "end")):
        if event == "start":
            walk.start(_name(element.tag))
            walk.data(element.text)
        else:
            walk.end()
            walk.data(element.tail)


def _name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


class PageWalk:
    """The blocks and headings of a page, from its elements' start, text and end events, in reading order.

    An element in _SKIP adds nothing of its own (its tail, after it, is the parent's text); a heading adds all the
    text inside it as one heading; a block is a paragraph of its own; a cell is set off by " | ". Elements nested
    more than `depth` deep shape nothing: their text joins the block at the bound."""

    def __init__(self, outline: OutlineText, depth: int) -> None:
        self.outline = outline
        self.depth = depth
        self.buffer: list[str] = []
        self.open: list[str] = []  # the open elements the walk follows (at most `depth`)
        self.deep = 0  # open elements past the depth bound
        self.inside = 0  # open elements inside a skipped element or a heading, that one included
        self.heading: list[str] | None = None
        self.level = 0
        self.pre = 0  # open <pre> elements

    def flush(self) -> None:
        lines = (" ".join(line.split()) for line in "".join(self.buffer).split("\n"))
        self.outline.paragraph("\n".join(line for line in lines if line))
        self.buffer.clear()

    def data(self, text: str | None) -> None:
        if not text:
            return
        if self.inside:
            if self.heading is not None:
                self.heading.append(text)
        else:
            self.buffer.append(text if self.pre else text.replace("\n", " "))

    def start(self, tag: str) -> None:
        if len(self.open) >= self.depth:
            self.deep += 1
            return
        self.open.append(tag)
        if self.inside:
            self.inside += 1
        elif tag in _SKIP:
            self.inside = 1
        elif tag in _HEADINGS:
            self.flush()
            self.inside, self.heading, self.level = 1, [], _HEADINGS[tag]
        elif tag in _BLOCKS:
            self.flush()
        elif tag == "br":
            self.buffer.append("\n")
        elif tag in _CELLS and self.buffer:
            self.buffer.append(" | ")
        if tag == "pre" and not self.inside:
            self.pre += 1

    def end(self) -> None:
        """The innermost open element ends."""
        if self.deep:
            self.deep -= 1
            return
        tag = self.open.pop()
        if self.inside:
            self.inside -= 1
            if not self.inside and self.heading is not None:
                self.outline.heading(self.level, "".join(self.heading))
                self.heading = None
            return
        if tag == "pre":
            self.pre -= 1
        if tag in _BLOCKS:
            self.flush()


class _Tokens(HTMLParser):
    """Feeds a `PageWalk` from the standard library's tokenizer: an end tag closes the innermost open element of
    its name and those opened inside it; one that matches no open element is ignored."""

    def __init__(self, walk: PageWalk) -> None:
        super().__init__(convert_charrefs=True)
        self.walk = walk
        self.names: list[str] = []
        self.count: dict[str, int] = {}
        self.started = False  # text before <body> (the head's) is left out, as the tree walk starts at the body

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "body":
            self.started = True
        if not self.started or tag in ("html", "head"):
            return
        self.walk.start(tag)
        if tag in _VOID:
            self.walk.end()
            return
        self.names.append(tag)
        self.count[tag] = self.count.get(tag, 0) + 1

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        if self.started:
            self.walk.start(tag)
            self.walk.end()

    def handle_endtag(self, tag: str) -> None:
        if not self.count.get(tag):
            return
        while True:
            name = self.names.pop()
            self.count[name] -= 1
            self.walk.end()
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        if self.started:
            self.walk.data(data)

    def close(self) -> None:
        super().close()
        while self.names:
            self.handle_endtag(self.names[-1])


def _tokenize(text: str, walk: PageWalk) -> None:
    tokens = _Tokens(walk)
    tokens.started = "<body" not in text.lower()
    tokens.feed(text)
    tokens.close()
