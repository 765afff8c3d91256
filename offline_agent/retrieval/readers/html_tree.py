"""The main content of a page parsed by lxml: `html_content.PageText`'s rules, applied to the tree.

Walking every element through PageText's events (a start, an end and a run of text each, in Python) cost more than
parsing: the Python manual's pages hold 900,000 elements, most of them inline (`<span class="pre">`). Here one
plain loop over the elements picks those whose tag or attributes could make them chrome (the verdict on a class
attribute is cached), `is_chrome` decides on those, and the chrome is cut out of the tree; then only the block
elements get their blank lines and the headings their markers, by editing their text, and lxml writes the text out
in C. The result is the same as `PageText`'s from the same page (a test compares both on pages of every kind); a
page that holds the marker character itself is left to `PageText`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from offline_agent.retrieval.readers.base import Section
from offline_agent.retrieval.readers.html_content import (
    BLOCK_TAGS,
    CELL_TAGS,
    CHROME_IDS,
    HEADINGS,
    RESUME,
    SENTINEL,
    SKIP_TAGS,
    TERM,
    WHOLE,
    WORD,
    assemble,
    class_verdict,
    is_callout,
    is_chrome,
    term_level,
)

_MAYBE_TAGS = SKIP_TAGS | {"header"}
_MAIN_TAGS = ("main", "article")
_MAYBE_ATTRIBUTES = ("role", "aria-hidden")


_CHROME, _CALLOUT, _NEITHER = 1, 2, 0
# class attribute -> what it makes its element; read once per element of every page, so a plain dict (cleared when
# it grows past a bound) and not the two cached functions it stands for
_CLASS_KINDS: dict[str, int] = {}


def _class_kind(classes: str) -> int:
    """_CHROME (the class may make its element chrome: is_chrome decides), _CALLOUT or _NEITHER."""
    if len(_CLASS_KINDS) >= 8192:
        _CLASS_KINDS.clear()
    chrome = class_verdict(classes) in (WHOLE, WORD)
    kind = _CHROME if chrome else _CALLOUT if is_callout(classes) else _NEITHER
    _CLASS_KINDS[classes] = kind
    return kind


def _candidates(root: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """The elements that might be chrome (is_chrome decides on each: a tag that is, a role or aria-hidden
    attribute, or a class or id value that names chrome), the main-content elements, and the callout boxes (a
    note, a warning: their headings title them), in document order.

    One loop in Python: lxml's XPath took 20-50x longer on the same tests."""
    chrome: list[Any] = []
    mains: list[Any] = []
    callouts: list[Any] = []
    kinds = _CLASS_KINDS
    for element in root.iter():
        tag = element.tag
        if tag in _MAYBE_TAGS:
            chrome.append(element)
            continue
        if tag in _MAIN_TAGS:
            mains.append(element)
        maybe = False
        for name, value in element.items():
            if name == "class":
                kind = kinds.get(value)
                if kind is None:
                    kind = _class_kind(value)
                if kind == _CHROME:
                    maybe = True
                elif kind == _CALLOUT:
                    callouts.append(element)
            elif name in _MAYBE_ATTRIBUTES or (name == "id" and value.lower() in CHROME_IDS):
                if name == "role" and value == "main" and tag not in _MAIN_TAGS:
                    mains.append(element)
                maybe = True
        if maybe:
            chrome.append(element)
    return chrome, mains, callouts


def tree_content(root: Any) -> tuple[str, str, tuple[Section, ...]] | None:
    """(title, main text, sections) of the page whose lxml tree is `root`; None where the page holds the marker
    character (the caller then reads it the slow way)."""
    from lxml import etree

    title_element = root.find(".//title")
    title = "" if title_element is None else "".join(title_element.itertext())
    if title_element is not None:
        _cut(title_element)  # its text is the title, not the page's (as PageText reads it)
    chrome, mains, callouts = _candidates(root)
    dropped: set[Any] = set()
    for element in chrome:
        if any(a in dropped for a in element.iterancestors()):
            continue
        in_main = element.tag == "header" and any(_is_main(a) for a in element.iterancestors())
        if is_chrome(element.tag, element.get, in_main):
            dropped.add(element)
    if root in dropped:
        return "", "", ()
    for element in dropped:
        _cut(element)
    mains = [m for m in mains if not any(_is_main(a) or a in dropped for a in m.iterancestors()) and m not in dropped]
    regions = mains if any(_has_text(m) for m in mains) else [root]
    headings: list[tuple[int, str | None]] = []
    for region in regions:
        for element in region.iter(*BLOCK_TAGS, *CELL_TAGS, "br", "hr"):
            _mark_block(element, element is region)
        _mark_headings(region, headings, callouts)
    texts = [etree.tostring(r, method="text", encoding="unicode", with_tail=False) for r in regions]
    marked_text = "\n\n".join(texts) + "\n\n"
    if marked_text.count(SENTINEL) + marked_text.count(RESUME) != len(headings):
        return None
    return assemble(marked_text, headings, title)


def _is_main(element: Any) -> bool:
    return element.tag in ("main", "article") or element.get("role") == "main"


def _has_text(element: Any) -> bool:
    return any(text.strip() for text in element.itertext())


def _cut(element: Any) -> None:
    """Remove `element` and what is inside it, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        before = element.getprevious()
        if before is not None:
            before.tail = (before.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


def _mark_block(element: Any, is_region: bool) -> None:
    """The breaks PageText writes where the element starts and ends: a blank line around a block, a space before
    a table cell, a line break for <br>."""
    tag = element.tag
    if tag == "br":
        element.tail = "\n" + (element.tail or "")
    elif tag == "hr":
        element.tail = "\n\n" + (element.tail or "")
    elif tag in CELL_TAGS:
        element.text = " " + (element.text or "")
    else:
        element.text = "\n\n" + (element.text or "")
        if not is_region:
            element.tail = "\n\n" + (element.tail or "")


def _mark_headings(region: Any, headings: list[tuple[int, str | None]], callouts: list[Any]) -> None:
    """Mark the headings and description list terms of `region` that start sections (not one inside another, nor
    one in a callout box), and the end of each list with such terms (PageText's RESUME, after the blank line that
    ends the list), adding them to `headings`."""
    from lxml import etree

    titles = (*HEADINGS, TERM)
    boxed = {element for box in callouts for element in box.iter(*titles)}
    # the open description lists (those around the region too, as PageText counts them), and whether a term of
    # each opened a section
    lists = [False for a in region.iterancestors() if a.tag == "dl"]
    inside = 0  # open headings and terms: one inside another opens no section
    for event, element in etree.iterwalk(region, events=("start", "end"), tag=(*titles, "dl")):
        if element.tag == "dl":
            if event == "start":
                lists.append(False)
            elif lists.pop():
                # _mark_block began the tail with "\n\n"; a list that is the region itself has none, and its end
                # is then written nowhere: the count of marks falls short, and PageText reads the page
                tail = element.tail or ""
                element.tail = tail[:2] + RESUME + tail[2:]
                headings.append((term_level(len(lists) + 1), None))
            continue
        if event == "end":
            inside -= 1
            continue
        inside += 1
        if inside > 1 or element in boxed:
            continue
        level = HEADINGS.get(element.tag) or term_level(len(lists))
        marked = _mark_heading(element, level)
        if marked is not None:
            headings.append(marked)
            if element.tag == TERM and lists:
                lists[-1] = True


def _mark_heading(heading: Any, level: int) -> tuple[int, str] | None:
    """(level, text) of a heading (or a description list's term) that starts a section, with the marker put before
    its first character; None for one without text."""
    text = " ".join("".join(heading.itertext()).split())
    if not text:
        return None
    for element, attribute in _text_slots(heading):
        value = getattr(element, attribute)
        stripped = value.lstrip() if value else ""
        if stripped:
            setattr(element, attribute, value[: len(value) - len(stripped)] + SENTINEL + stripped)
            return level, text
    return None


def _text_slots(heading: Any) -> Iterator[tuple[Any, str]]:
    """The (element, "text" or "tail") slots of a heading's text, in reading order (its own tail aside)."""
    from lxml import etree

    for event, element in etree.iterwalk(heading, events=("start", "end")):
        if event == "start":
            yield element, "text"
        elif element is not heading:
            yield element, "tail"
