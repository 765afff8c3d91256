"""The main content of an HTML page, from parse events: its text without page chrome, and where each heading is.

Documentation pages wrap a little content in a lot of chrome (navigation bars, sidebars, "Previous topic / Next"
links, breadcrumbs, search boxes, footers), and indexed as text that chrome fills passages and search results.
`PageText` takes the events of any parser (`start` of an element with a way to read its attributes, `end`, `data`)
and keeps only what a reader of the page came for:

- dropped with everything inside them: scripts, styles, forms and other non-text elements; `nav`, `footer`,
  and a `header` outside the main content (not `aside`: Sphinx writes footnotes and topics in one); elements
  whose role is navigation, search, banner, contentinfo, complementary, menu or toolbar, or that are hidden from
  screen readers (`aria-hidden`); block elements whose class (or id) names page chrome: a class word such as
  `sidebar`, `related`, `breadcrumbs`, `toc`, or a word of six letters or more starting or ending in `nav`
  (DocBook's navheader/navfooter tables, Sphinx's sidebar and related bar, MkDocs', Docusaurus' and Javadoc's
  navigation); and elements, inline ones too, whose whole class name is one of a few (`headerlink`,
  `hash-link`: heading anchors; `contents`: a local table of contents). The page's frame (`html`, `body`) and
  main content are never dropped for their attributes;
- when the page marks its main content (`main`, `role="main"`, or `article`), only that is kept (Sphinx's
  `div.body`, MkDocs' and Docusaurus' main column, Javadoc's `main`); a page that marks none keeps everything
  not dropped (DocBook output, hand-written pages).

Headings h1-h6 of the kept text become sections with their heading path (an h3 under the h2 before it; a heading
that titles a note or warning box is not a section), and so does each term of a description list (`<dt>`), one
level below the headings: a manual's reference entries (a setting, a command-line option, a function, a glossary
term) are written as such lists, and a passage then knows the entry it describes ("Connection Settings >
max_connections (integer)") and never runs across two entries; where the list ends, the text after it is back in
the section around the list. The page's title is its `<title>` less the site name
where one part of it is the page's first heading ("Built-in Types — Python 3.11.2 documentation" -> "Built-in
Types"). Block elements end in a blank line (a sentence boundary), table cells are separated by a space, and runs
of spaces are collapsed.

Limits: chrome that is neither marked up as such nor named by its class (a menu of links in a plain `div` of a
page without a main element) stays; content a site marks up as navigation is dropped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from offline_agent.retrieval.kernel import compiled
from offline_agent.retrieval.readers.base import Section

Attr = Callable[[str], "str | None"]
_COMPILED = compiled("_text", 1)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SKIP_TAGS = _names(
    """script style noscript template svg head iframe object embed canvas nav footer form button select
    textarea dialog"""
)
VOID_TAGS = _names("area base br col embed hr img input link meta param source track wbr")
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
TERM = "dt"  # a description list's term heads the description after it, one level below any h1-h6
BLOCK_TAGS = _names(
    """p div section article main header address blockquote pre figure figcaption table caption thead tbody tfoot tr
    ul ol li dl dt dd details summary fieldset legend center"""
) | frozenset(HEADINGS)
CELL_TAGS = frozenset({"td", "th"})
_HEADING_LEVELS = frozenset(HEADINGS.values())
_LIST_ITEMS = frozenset({"dt", "dd"})
CHROME_ROLES = _names("navigation search banner contentinfo complementary menu menubar toolbar")
# Class (or id) words that name page chrome; a class is split into words at spaces, "-" and "_".
CHROME_WORDS = _names(
    """nav sidebar sphinxsidebar sphinxsidebarwrapper related breadcrumb breadcrumbs footer toc menu pagination
    pager cookie cookies banner skip skiplink searchbox search share social copyright anchorjs"""
)
# Whole class names that name chrome ("contents" only as a whole: DocBook's "table-contents" holds a table).
CHROME_CLASSES = _names(
    "contents table-of-contents headerlink hash-link anchor-link edit-this-page theme-edit-this-page copybutton"
)
# Inline elements are dropped by a whole class name only: a class word in them names what they point to (Sphinx's
# FAQ headings are written in <a class="toc-backref">).
INLINE_TAGS = _names("a span code em strong b i u s small sup sub abbr kbd samp var cite q mark label tt dfn bdi")
# Never dropped by their attributes: the page's frame and its main content (Docusaurus writes <body
# class="navigation-with-keyboard">).
FRAME_TAGS = _names("html body main article")
# An id names chrome only as a whole word (ids are also a section's anchor, as in <section id="navigation">).
CHROME_IDS = _names("sidebar navigation nav navbar menu footer toc breadcrumbs breadcrumb searchbox")
_SPLIT_CLASS = re.compile(r"[\s_-]+")
SENTINEL = "\ue000"  # marks where a heading's text starts until the text is assembled (a private-use character)
RESUME = "\ue001"  # marks where a description list with terms ended: the section around the list goes on there
_RESUME_BEFORE_TEXT = re.compile(RESUME + r"(\s+)")
_TRAILING = " \n\t\r\f\v\u00a0" + RESUME  # a list's end with no text after it marks no section
# Spaces are collapsed by plain string replaces and a regular expression with a literal start (which the regular
# expression engine finds fast): a pattern starting with a class of characters is tried at every character, and
# that cost a sixth of the time of indexing a manual.
_OTHER_SPACES = "\t\r\f\v\u00a0"
_SPACE_RUN = re.compile("  +")
_BLANK_LINES = re.compile(r"\n\n\n+")

# A heading inside a callout box of one of these classes (DocBook's <div class="note"><h3>Note</h3>) titles the
# box, not a section of the page.
CALLOUT_CLASSES = _names("note tip warning caution important admonition")

_DROP, _MAIN, _HEADING, _CALLOUT = 1, 2, 4, 8


def is_chrome(tag: str, attr: Attr, in_main: bool) -> bool:
    """Whether the element `tag` (whose attributes `attr` reads) is page chrome, to be dropped with its contents."""
    if tag in SKIP_TAGS or (tag == "header" and not in_main):
        return True
    if tag in FRAME_TAGS:
        return False
    role = attr("role")
    if role is not None and role.strip().lower() in CHROME_ROLES:
        return True
    if attr("aria-hidden") == "true":
        return True
    classes = attr("class")
    if classes:
        verdict = class_verdict(classes)
        if verdict is not None:
            return verdict is WHOLE or (verdict is WORD and tag not in INLINE_TAGS)
    element_id = attr("id")
    return element_id is not None and element_id.lower() in CHROME_IDS and tag not in HEADINGS


def term_level(lists: int) -> int:
    """The section level of a description list's term inside `lists` open description lists: below every h1-h6
    heading (the next one closes it), and below the term of an outer list."""
    return len(HEADINGS) + max(lists, 1)


@functools.lru_cache(maxsize=4096)
def is_callout(classes: str) -> bool:
    """Whether a class attribute names a callout box (a note, a warning), whose headings title the box, not a
    section; cached, as a page repeats a few classes thousands of times."""
    return not CALLOUT_CLASSES.isdisjoint(classes.lower().split())


WHOLE, WORD, CONTENT = "whole", "word", "content"


@functools.lru_cache(maxsize=4096)
def class_verdict(classes: str) -> str | None:
    """What a class attribute says: WHOLE (a class name is chrome), WORD (a word of a class name is), CONTENT
    (never chrome: old Sphinx's <div class="section" id="navigation">), None (nothing); cached, as a page repeats
    a few classes thousands of times."""
    names = classes.lower().split()
    if "section" in names:
        return CONTENT
    if not CHROME_CLASSES.isdisjoint(names):
        return WHOLE
    for name in names:
        for word in _SPLIT_CLASS.split(name):
            if word in CHROME_WORDS or (len(word) >= 6 and (word.startswith("nav") or word.endswith("nav"))):
                return WORD
    return None


class PageText:
    """Collects the main text of a page from parse events; `result()` gives (title, text, sections).

    Events may come from a tree (every element ends, in order) or from a tokenizer where end tags may be missing
    or stray: `end` closes the innermost open element of that name and everything opened inside it, and ignores
    an end tag that matches no open element.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._stack: list[tuple[str, int]] = []
        # for each open description list (and the page outside any), where in the stack the outermost term or
        # description still open in it is (-1: none), so that a new one closes it without a scan of the stack
        self._items: list[int] = [-1]
        self._open: dict[str, int] = {}  # open elements by name
        self._drop = 0  # open elements being dropped
        self._main = 0  # open main-content elements
        self._callout = 0  # open callout boxes (notes, warnings)
        self._regions: list[list[int]] = []  # [first part, end part] of each outermost main element
        self._title: list[str] = []
        self._in_title = False
        self._title_done = False  # only the first <title> names the page (an <svg> may hold others)
        self.headings: list[tuple[int, str | None]] = []  # (level, text; None at a list's end), as their markers
        self._heading: list[str] | None = None  # text of the heading being read
        self._heading_level = 0
        self._sentinel_pending = False
        self._sentinels: list[int] = []  # part index of each heading's sentinel (or list end's RESUME)
        self._lists: list[bool] = []  # the open description lists, and whether a term of each opened a section

    # ---- events ----------------------------------------------------------------------------------------------
    def start(self, tag: str, attr: Attr) -> bool:
        """An element opens; returns whether nothing inside it matters (a tree walker may then skip it)."""
        if tag in VOID_TAGS:
            if not self._drop:
                if tag == "br":
                    self._break("\n")
                elif tag == "hr":
                    self._break("\n\n")
            return False
        if tag == "title" and not self._title_done:
            self._in_title = True
        if tag in _LIST_ITEMS:
            self._end_list_item(tag)
        effect = 0
        if self._drop or is_chrome(tag, attr, self._main > 0):
            effect = _DROP
        else:
            if tag == "main" or tag == "article" or attr("role") == "main":
                effect |= _MAIN
                if not self._main:
                    self._regions.append([len(self.parts), -1])
                self._main += 1
            classes = attr("class")
            if classes and is_callout(classes):
                effect |= _CALLOUT
                self._callout += 1
            level = HEADINGS.get(tag) or (term_level(len(self._lists)) if tag == TERM else None)
            if level is not None and self._heading is None and not self._callout:
                effect |= _HEADING
                self._heading, self._heading_level, self._sentinel_pending = [], level, True
            elif tag == "dl":
                self._lists.append(False)
            if tag in BLOCK_TAGS:
                self._break("\n\n")
            elif tag in CELL_TAGS:
                self._break(" ")
        if effect & _DROP:
            self._drop += 1
        if tag == "dl":
            self._items.append(-1)
        elif tag in _LIST_ITEMS and self._items[-1] == -1:
            self._items[-1] = len(self._stack)
        self._stack.append((tag, effect))
        self._open[tag] = self._open.get(tag, 0) + 1
        return bool(effect & _DROP) and tag not in ("head", "title")  # the head holds the title

    def end(self, tag: str) -> None:
        """An element closes (with the elements opened inside it that are still open)."""
        if tag in VOID_TAGS:
            return
        if tag == "title" and self._in_title:
            self._in_title, self._title_done = False, True
        if not self._open.get(tag):
            return  # a stray end tag (looked up by count: scanning the stack for each made a bad page slow)
        stack = self._stack
        while True:
            name, effect = stack.pop()
            self._close(name, effect)
            if name == tag:
                return

    def _end_list_item(self, tag: str) -> None:
        """Close the description still open in the innermost description list where a term starts, or the term
        where a description starts (HTML may leave their end tags out), as libxml2 does; a term right after a
        term stays inside it, as there (two names of one entry: "-a", "--data-only")."""
        stack = self._stack
        outermost = self._items[-1]
        if outermost == -1 or stack[outermost][0] == tag:
            return
        while len(stack) > outermost:
            self._close(*stack.pop())

    def _close(self, tag: str, effect: int) -> None:
        """An element closes: it has just been taken off the stack."""
        self._open[tag] -= 1
        if tag == "dl":
            self._items.pop()
        elif self._items[-1] == len(self._stack):
            self._items[-1] = -1
        if effect & _DROP:
            self._drop -= 1
            return
        if tag in BLOCK_TAGS:
            self._break("\n\n")
        if tag == "dl" and self._lists.pop():
            self._sentinels.append(len(self.parts))
            self.parts.append(RESUME)
            self.headings.append((term_level(len(self._lists) + 1), None))
        if effect & _HEADING:
            text = " ".join("".join(self._heading or ()).split())
            if not self._sentinel_pending:
                self.headings.append((self._heading_level, text))
                if tag == TERM and self._lists:
                    self._lists[-1] = True
            self._heading, self._sentinel_pending = None, False
        if effect & _CALLOUT:
            self._callout -= 1
        if effect & _MAIN:
            self._main -= 1
            if not self._main:
                self._regions[-1][1] = len(self.parts)

    def data(self, text: str) -> None:
        """Text inside the current element."""
        if self._in_title:
            self._title.append(text)
            return
        if self._drop:
            return
        if SENTINEL in text or RESUME in text:
            text = text.replace(SENTINEL, "").replace(RESUME, "")
        if self._heading is not None:
            self._heading.append(text)
            if self._sentinel_pending:
                stripped = text.lstrip()
                if stripped:
                    self.parts.append(text[: len(text) - len(stripped)])
                    self._sentinels.append(len(self.parts))
                    self.parts.append(SENTINEL)
                    self.parts.append(stripped)
                    self._sentinel_pending = False
                return
        self.parts.append(text)

    def _break(self, space: str) -> None:
        """A break between blocks, cells or lines, which also parts the words of a heading being read."""
        self.parts.append(space)
        if self._heading is not None:
            self._heading.append(" ")

    # ---- result ----------------------------------------------------------------------------------------------
    def result(self) -> tuple[str, str, tuple[Section, ...]]:
        """(title, text, sections) of the page: the main content when the page marks one that holds text."""
        while self._stack:  # elements left open at the end of the page
            self._close(*self._stack.pop())
        parts, sentinels, headings = self.parts, self._sentinels, self.headings
        if self._regions:
            kept: list[str] = []
            kept_headings: list[tuple[int, str | None]] = []
            for first, end in self._regions:
                inside = [i for i, at in enumerate(sentinels) if first <= at < end]
                kept_headings.extend(headings[i] for i in inside)
                kept.append("".join(parts[first:end]))
                kept.append("\n\n")
            if "".join(kept).replace(SENTINEL, "").strip():
                parts, headings = kept, kept_headings
        return assemble("".join(parts), headings, "".join(self._title))


def assemble(marked: str, headings: list[tuple[int, str | None]], title: str) -> tuple[str, str, tuple[Section, ...]]:
    """(title, text, sections) from the kept text, in which a SENTINEL marks where each of `headings` ((level,
    text), in order) starts, and a RESUME where a description list ended (level of its terms, text None): spaces
    collapsed, at most one blank line in a row, each heading a section, and after each list the section around it
    again, from the next text on."""
    if RESUME in marked:
        marked = _RESUME_BEFORE_TEXT.sub(lambda gap: gap.group(1) + RESUME, marked).rstrip(_TRAILING)
    text = collapse_spaces(marked)
    pieces = text.replace(RESUME, SENTINEL).split(SENTINEL)
    text = "".join(pieces)
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    offset = 0
    for piece, (level, heading) in zip(pieces, headings, strict=False):
        offset += len(piece)
        while path and path[-1][0] >= level:
            path.pop()
        if heading is not None:
            path.append((level, heading))
        if sections and sections[-1].start == offset:
            sections.pop()  # a list that ended right where a heading starts: no text of the section around it
        sections.append(Section(offset, tuple(h for _, h in path)))
    title = " ".join(title.split())
    first = next((heading for level, heading in headings if level in _HEADING_LEVELS and heading), "")
    return page_title(title, first), text, tuple(sections)


def collapse_spaces(text: str) -> str:
    """Runs of spaces and tabs as one space, no space at either end of a line, at most one blank line in a row,
    and no space or line break at either end (other line breaks are kept). In C where `_text.c` is built."""
    if _COMPILED is not None:
        return _COMPILED.collapse_spaces(text)
    return _collapse_spaces(text)


def _collapse_spaces(text: str) -> str:
    """`collapse_spaces` in Python."""
    for space in _OTHER_SPACES:
        if space in text:
            text = text.replace(space, " ")
    text = _SPACE_RUN.sub(" ", text)
    text = text.replace(" \n", "\n").replace("\n ", "\n")  # one space at most beside a break, after the runs
    return _BLANK_LINES.sub("\n\n", text).strip()


_TITLE_SEPARATORS = re.compile(r"\s+[—–|·»:-]+\s+")


def page_title(title: str, first_heading: str) -> str:
    """The page's title: its `<title>` less the site's name where one part of it is the first heading, the first
    heading where there is no `<title>`."""
    if not title:
        return first_heading
    if first_heading:
        wanted = first_heading.casefold()
        for part in _TITLE_SEPARATORS.split(title):
            if part.strip().casefold() == wanted:
                return part.strip()
    return title
