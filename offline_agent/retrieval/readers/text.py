"""Plain text, Markdown and reStructuredText: the file's text as it is, titled by a leading heading, with a section
for each heading.

Headings: Markdown's `#` to `######` lines and its `===`/`---` underlines (outside ``` and ~~~ code fences) in
`.md`, `.markdown`, `.txt` and files without a suffix; reStructuredText's underlined (and overlined) titles in
`.rst`, whose levels follow the order in which each style of underline first appears, as docutils reads them.
"""

from __future__ import annotations

import re
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, Section, decode_text

_MD_HEADING = re.compile(r"[ \t]*#{1,6}[ \t]+([^\n]*\S)")
_RST_UNDERLINE = re.compile(r"""([=\-~^"'`*+#:.])\1{2,}[ \t]*$""")
MARKDOWN = (".md", ".markdown", ".txt", ".text", "")
# Each pattern tries a line once, from its start, and never backtracks more than the line's length (a pattern with
# two unbounded runs in a row would take time in the square of a long line's length).
_MD_LINES = re.compile(
    r"^ {0,3}(?P<fence>```|~~~)"
    r"|^ {0,3}(?P<hashes>#{1,6})[ \t]+(?P<atx>[^\n]*)"
    r"|^(?P<setext>[^\n]+)\n {0,3}(?P<under>=+|-+)[ \t]*$",
    re.MULTILINE,
)
_RST_TITLES = re.compile(
    r"^(?:(?P<over>([=\-~^\"'`*+#:.])\2{2,})[ \t]*\n)?"
    r"(?P<title>[^\n]+)\n(?P<under>([=\-~^\"'`*+#:.])\5{2,})[ \t]*$",
    re.MULTILINE,
)
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*")
_NOT_SETEXT = re.compile(r"[ \t]*(?:[-*+>|]|\d+[.)]|#)")  # a list item, quote, table row or heading is no title


def text_title(text: str, ext: str) -> tuple[str, int]:
    """A title from a leading Markdown heading or reStructuredText title, and where the body starts."""
    pos = len(text) - len(text.lstrip())
    lines = text[pos:].split("\n", 3)
    first = lines[0].rstrip("\r")
    m = _MD_HEADING.match(first)
    if m and ext in MARKDOWN and _atx_text(m.group(1)):
        return _atx_text(m.group(1)), pos + len(lines[0]) + (1 if len(lines) > 1 else 0)
    underlined = len(lines) > 1 and _SETEXT_UNDERLINE.fullmatch(lines[1].rstrip("\r"))
    if ext in MARKDOWN and underlined and first.strip() and not _NOT_SETEXT.match(first):
        return first.strip(), pos + len(lines[0]) + len(lines[1]) + 2  # "Title\n=====": an underlined title
    if ext == ".rst":
        # "Title\n=====" or an overlined "=====\nTitle\n=====".
        if len(lines) > 1 and first.strip() and _RST_UNDERLINE.match(lines[1].rstrip("\r")):
            return first.strip(), pos + len(lines[0]) + len(lines[1]) + 2
        if len(lines) > 2 and _RST_UNDERLINE.match(first) and _RST_UNDERLINE.match(lines[2].rstrip("\r")):
            return lines[1].strip(), pos + sum(len(x) + 1 for x in lines[:3])
    return "", 0


def _atx_text(line: str) -> str:
    """A `#` heading's text less its closing run of `#` (which must follow a space: "C#" keeps its own)."""
    text = line.strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip()
    return text


def text_sections(text: str, ext: str) -> tuple[Section, ...]:
    """A section for each heading of a Markdown or reStructuredText file (see the module's docstring), starting
    where the heading's first line (or a title's overline) starts."""
    if ext == ".rst":
        headings = _rst_headings(text)
    elif ext in MARKDOWN:
        headings = _markdown_headings(text)
    else:
        return ()
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    for start, level, heading in headings:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading))
        sections.append(Section(start, tuple(h for _, h in path)))
    return tuple(sections)


def _markdown_headings(text: str) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    fence = None
    for m in _MD_LINES.finditer(text):
        if m.group("fence"):
            if fence is None:
                fence = m.group("fence")
            elif m.group("fence") == fence:
                fence = None
            continue
        if fence is not None:
            continue
        if m.group("hashes"):
            heading = _atx_text(m.group("atx"))
            if heading:
                out.append((m.start(), len(m.group("hashes")), heading))
        else:
            title = m.group("setext")
            if not title.strip():
                continue
            before = text.rfind("\n", 0, max(0, m.start() - 1))
            after_blank = m.start() == 0 or text[before + 1 : m.start()].strip() == ""
            if after_blank and not _NOT_SETEXT.match(title):
                out.append((m.start(), 1 if m.group("under")[0] == "=" else 2, title.strip()))
    return out


def _rst_headings(text: str) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    styles: list[tuple[str, bool]] = []
    for m in _RST_TITLES.finditer(text):
        title = m.group("title")
        if not title.strip() or _RST_UNDERLINE.fullmatch(title.strip()):
            continue  # a line of punctuation under another: a transition, not a title
        style = (m.group("under")[0], m.group("over") is not None)
        if style not in styles:
            styles.append(style)
        out.append((m.start(), styles.index(style) + 1, title.strip()))
    return out


class TextReader:
    """`.txt`, `.md`, `.rst` and files with no suffix: UTF-8 (or UTF-16 with a byte-order mark) text."""

    name = "text"
    extensions = frozenset({".txt", ".text", ".md", ".markdown", ".rst", ""})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        text = decode_text(data)
        ext = path.suffix.lower()
        title, body_start = text_title(text, ext)
        return [Document(doc_id, title or path.stem, text, body_start, sections=text_sections(text, ext))], []
