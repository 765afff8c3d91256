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
from offline_agent.retrieval.readers.base import Document, Fields, SkipFile, import_extra
from offline_agent.retrieval.readers.outline import OutlineText, one_line

_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


class DocxReader:
    """`.docx` through python-docx."""

    name = "docx"
    extensions = frozenset({".docx"})
    extra = "docx"

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        docx = import_extra("docx", "DOCX", "python-docx", "docx")
        open_zip(data, "DOCX", required=("[Content_Types].xml",), limits=fields.limits).close()
        try:
            document = docx.Document(io.BytesIO(data))
            outline, styled_title = _outline(document)
            title = one_line(document.core_properties.title or "") or styled_title or outline.first_heading()
        except Exception as exc:  # python-docx and lxml raise many kinds on damaged parts
            raise SkipFile(f"unreadable DOCX ({type(exc).__name__}: {str(exc)[:80]})") from None
        sections = tuple(outline.sections)
        return [Document(doc_id, title or path.stem, outline.text, sections=sections)], []


def _outline(document: Any) -> tuple[OutlineText, str]:
    """The body as an outline, and the text of the first paragraph in the Title style ('' if none)."""
    from docx.table import Table

    outline = OutlineText()
    title = ""
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            outline.paragraph(_table_text(block))
            continue
        level = _heading_level(block)
        if level is not None:
            outline.heading(level, block.text)
            continue
        if not title and _style_names(block)[:1] == ["title"]:
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


def _style_names(paragraph: Any) -> list[str]:
    """The lower-case names of the paragraph's style and the styles it is based on, nearest first."""
    names, style = [], paragraph.style
    while style is not None and len(names) < 10:
        names.append((style.name or "").lower())
        style = style.base_style
    return names


def _heading_level(paragraph: Any) -> int | None:
    """1-9 for a heading paragraph, None for any other."""
    for name in _style_names(paragraph):
        if m := _HEADING_STYLE.fullmatch(name):
            return int(m.group(1))
    elements = [paragraph._p.pPr]
    style = paragraph.style
    while style is not None and len(elements) < 10:
        elements.append(style.element.pPr)
        style = style.base_style
    for ppr in elements:
        found = ppr.find(f"{_WORD_NS}outlineLvl") if ppr is not None else None
        if found is not None:
            value = found.get(f"{_WORD_NS}val", "")
            return int(value) + 1 if value.isdigit() and int(value) < 9 else None
    return None
