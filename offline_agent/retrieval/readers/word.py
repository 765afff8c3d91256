"""Word documents (.docx) through python-docx (the `docx` extra): body paragraphs and tables in reading order.

The title is the document's Title property, else its first paragraph in the Title style, else its first
heading, else the file name. A heading is a paragraph in a "Heading N" style (or a style based on one, or one
with an outline level), and opens a section. Headers, footers, footnotes, comments and text boxes are not read.
A password-protected file (an OLE2 container, not a zip), an old binary .doc renamed, or a damaged zip is
skipped with its reason.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from offline_agent.retrieval.readers.archive import open_zip
from offline_agent.retrieval.readers.base import Document, Fields, PackageReader
from offline_agent.retrieval.readers.outline import OutlineText, one_line

_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_ON = ("1", "true", "on")


class DocxReader(PackageReader, format="docx", package="python-docx"):
    """`.docx` through python-docx."""

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        docx = self.library("docx")
        open_zip(data, "DOCX", required=("[Content_Types].xml",), limits=fields.limits).close()
        with self.reading():  # python-docx and lxml on damaged parts
            document = docx.Document(io.BytesIO(data))
            outline, styled_title = _outline(document)
            title = one_line(document.core_properties.title or "") or styled_title or outline.first_heading()
        sections = tuple(outline.sections)
        return [Document(doc_id, title or path.stem, outline.text, sections=sections)], []


def _outline(document: Any) -> tuple[OutlineText, str]:
    """The body as an outline, and the text of the first paragraph in the Title style ('' if none)."""
    from docx.table import Table

    outline = OutlineText()
    title = ""
    styles = _Styles(document.styles.element)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            outline.paragraph(_table_text(block))
            continue
        style = styles.of(block._p.style)
        level = styles.heading_level(block._p.pPr, style)
        if level is not None:
            outline.heading(level, block.text)
            continue
        if not title and styles.names(style)[:1] == ("title",):
            title = one_line(block.text)
        outline.paragraph(block.text)
    return outline, title


def _table_text(table: Any) -> str:
    """One line per row, cells separated by " | " (a merged cell once)."""
    lines = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(one_line(cell.text))
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


class _Styles:
    """The document's styles, read once into a table by id.

    python-docx finds a paragraph's style, and each style it is based on, with an XPath query that scans every
    style of the document: a file of 2,000 styles and 2,000 paragraphs took 142 s. Here each lookup is one dict
    lookup, and the answers are those python-docx gives: a paragraph with no style, or one whose style is not a
    paragraph style, is in the last default paragraph style; a chain of based-on styles is followed 10 deep."""

    def __init__(self, root: Any) -> None:
        self.by_id: dict[str, Any] = {}
        self.default = None
        for style in root.iterchildren(f"{_WORD_NS}style"):
            self.by_id.setdefault(style.get(f"{_WORD_NS}styleId"), style)
            if style.get(f"{_WORD_NS}type") == "paragraph" and style.get(f"{_WORD_NS}default") in _ON:
                self.default = style
        self._chains: dict[int, tuple[Any, ...]] = {}
        self._names: dict[int, tuple[str, ...]] = {}
        self._levels: dict[int, tuple[int | None, int | None]] = {}

    def of(self, style_id: str | None) -> Any:
        """The style element of a paragraph whose style id is `style_id`."""
        style = self.by_id.get(style_id) if style_id is not None else None
        if style is None or style.get(f"{_WORD_NS}type") != "paragraph":
            return self.default
        return style

    def chain(self, style: Any) -> tuple[Any, ...]:
        """`style` and the styles it is based on, nearest first, 10 at most."""
        if style is None:
            return ()
        key = id(style)
        if key not in self._chains:
            chain = [style]
            while len(chain) < 10:
                based = style.find(f"{_WORD_NS}basedOn")
                style = self.by_id.get(based.get(f"{_WORD_NS}val")) if based is not None else None
                if style is None:
                    break
                chain.append(style)
            self._chains[key] = tuple(chain)
        return self._chains[key]

    def names(self, style: Any) -> tuple[str, ...]:
        """The lower-case names of `style` and the styles it is based on, nearest first."""
        key = id(style)
        if key not in self._names:
            names = (element.find(f"{_WORD_NS}name") for element in self.chain(style))
            self._names[key] = tuple((n.get(f"{_WORD_NS}val") or "").lower() if n is not None else "" for n in names)
        return self._names[key]

    def heading_level(self, ppr: Any, style: Any) -> int | None:
        """1-9 for a heading paragraph (its properties `ppr`, its style `style`), None for any other."""
        key = id(style)
        if key not in self._levels:
            named = (int(m.group(1)) for name in self.names(style) if (m := _HEADING_STYLE.fullmatch(name)))
            outlined = (_outline_level(e.find(f"{_WORD_NS}pPr")) for e in self.chain(style)[:9])
            self._levels[key] = (next(named, None), next((level for level in outlined if level is not False), None))
        named_level, style_level = self._levels[key]
        if named_level is not None:
            return named_level
        own = _outline_level(ppr)
        return style_level if own is False else own


def _outline_level(properties: Any) -> int | None | bool:
    """The outline level of paragraph properties: 1-9, None for a level that is no heading's, False for none."""
    found = properties.find(f"{_WORD_NS}outlineLvl") if properties is not None else None
    if found is None:
        return False
    value = found.get(f"{_WORD_NS}val", "")
    return int(value) + 1 if value.isdigit() and int(value) < 9 else None
