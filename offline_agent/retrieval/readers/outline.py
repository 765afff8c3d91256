"""A document's text built block by block, with the heading path of every section where it starts.

The readers of formats that mark their headings (DOCX heading styles, ODT headings, EPUB chapters and their
HTML headings) add paragraphs and headings in reading order; `OutlineText` joins the blocks with blank lines
and records a `Section` at each heading, so a passage can later say where in the document it sits. A heading
of level n closes every open heading of level n or deeper, as in an outline; a skipped level (a level-3 heading
under a level-1) simply nests.
"""

from __future__ import annotations

from offline_agent.retrieval.readers.base import Section

BLOCK_BREAK = "\n\n"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (line breaks included) made one space, trimmed."""
    return " ".join(text.split())


def _same_title(heading: str, title: str) -> bool:
    """Whether a heading repeats a title, perhaps with a word before it ("Chapter 4. Conclusion", "4. Conclusion")."""
    a, b = heading.casefold(), title.casefold()
    return a == b or a.endswith(" " + b) or b.endswith(" " + a)


class OutlineText:
    """Blocks of text and the sections their headings open.

    `base` is a path every section lies under (an EPUB chapter's place in the book's table of contents); an
    outermost heading that repeats the last element of `base` (a chapter page opening with its own title, as
    "Chapter 4. Conclusion" under "4. Conclusion") is not added twice.
    """

    def __init__(self, base: tuple[str, ...] = ()) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._open: list[tuple[int, str]] = []
        self._base = base
        self.sections: list[Section] = [Section(0, base)] if base else []

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def first_heading(self) -> str:
        """The text of the first heading added (beyond `base`), or ''."""
        return next((s.path[-1] for s in self.sections if len(s.path) > len(self._base)), "")

    def paragraph(self, text: str) -> int | None:
        """Add a block of text (inner line breaks kept, surrounding space trimmed); return where it starts, or
        None when it is blank."""
        text = text.strip()
        if not text:
            return None
        if self._parts:
            self._parts.append(BLOCK_BREAK)
            self._length += len(BLOCK_BREAK)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        return start

    def heading(self, level: int, text: str) -> None:
        """Add a heading of `level` (1 = outermost): its text is a block of its own and opens a section."""
        text = one_line(text)
        if not text:
            return
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, text))
        own = tuple(title for _, title in self._open)
        if self._base and _same_title(own[0], self._base[-1]):
            own = own[1:]
        start = self.paragraph(text)
        path = self._base + own
        if self.sections and self.sections[-1].start == start:
            self.sections[-1] = Section(start, path)  # a heading right at the base section's start replaces it
        elif not self.sections or self.sections[-1].path != path:
            self.sections.append(Section(start if start is not None else self._length, path))
