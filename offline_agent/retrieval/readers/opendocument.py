"""OpenDocument text (.odt) through odfpy (the `odt` extra): paragraphs, lists and tables in reading order.

The title is the document's dc:title, else its first heading, else the file name. Every `text:h` opens a
section at its outline level. Tables of contents and indexes (they repeat the headings), tracked deletions and
form controls are left out. A password-protected file (its manifest lists encryption data: the entries are
ciphertext) or a damaged zip is skipped with its reason.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any
from xml.parsers import expat

from offline_agent.retrieval.readers.archive import open_zip, read_member
from offline_agent.retrieval.readers.base import Document, Fields, PackageReader, SkipFile
from offline_agent.retrieval.readers.outline import OutlineText, one_line

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_DC_TITLE = ("http://purl.org/dc/elements/1.1/", "title")
_CONTAINERS = {(_TEXT, "list"), (_TEXT, "list-item"), (_TEXT, "list-header"), (_TEXT, "section")}
_CONTAINERS |= {(_TABLE, "table-header-rows"), (_TABLE, "table-rows"), (_TABLE, "table-row-group")}
_LEFT_OUT = {"table-of-content", "alphabetical-index", "illustration-index", "table-index", "object-index"}
_LEFT_OUT |= {"user-index", "bibliography", "tracked-changes", "sequence-decls", "variable-decls", "forms"}
_MIMETYPE = b"application/vnd.oasis.opendocument.text"


class ODTReader(PackageReader, format="odt", package="odfpy"):
    """`.odt` through odfpy."""

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        load = self.library("odf.opendocument").load
        with open_zip(data, "ODT", required=("content.xml",), limits=fields.limits) as archive:
            names = set(archive.namelist())
            if "META-INF/manifest.xml" in names and b"encryption-data" in read_member(
                archive, "META-INF/manifest.xml", "ODT"
            ):
                raise SkipFile("password-protected ODT (encrypted; save it without a password to index it)")
            mimetype = read_member(archive, "mimetype", "ODT").strip() if "mimetype" in names else _MIMETYPE
            if not mimetype.startswith(_MIMETYPE):
                shown = mimetype[:60].decode(errors="replace")
                raise SkipFile(f"not an ODF text document (its mimetype is {shown})")
            _check_well_formed(read_member(archive, "content.xml", "ODT"))
        with self.reading():  # odfpy's SAX parser and zipfile on damaged parts
            with contextlib.redirect_stdout(io.StringIO()):  # odfpy prints a part it cannot parse, and goes on
                document = load(io.BytesIO(data))
            outline = OutlineText()
            _add_blocks(document.text, outline)
            title = next((one_line(_text(e)) for e in document.meta.childNodes if e.qname == _DC_TITLE), "")
        title = title or outline.first_heading() or path.stem
        return [Document(doc_id, title, outline.text, sections=tuple(outline.sections))], []


def _check_well_formed(content: bytes) -> None:
    """SkipFile when content.xml is not well-formed XML: odfpy would print it and go on with what it had read."""
    parser = expat.ParserCreate()
    try:
        parser.Parse(content, True)
    except expat.ExpatError as exc:
        raise SkipFile(f"damaged ODT (content.xml is not well-formed XML: {exc})") from None


def _text(element: Any) -> str:
    from odf import teletype

    return teletype.extractText(element)


def _add_blocks(parent: Any, outline: OutlineText) -> None:
    """Add the block-level children of `parent` (office:text, a section, a list) to `outline` in order."""
    for element in parent.childNodes:
        qname = getattr(element, "qname", None)
        if qname is None or qname[1] in _LEFT_OUT:
            continue
        if qname == (_TEXT, "h"):
            level = str(element.getAttribute("outlinelevel") or "1")
            outline.heading(int(level) if level.isdigit() and int(level) > 0 else 1, _text(element))
        elif qname in _CONTAINERS:
            _add_blocks(element, outline)
        elif qname == (_TABLE, "table"):
            outline.paragraph("\n".join(_table_rows(element)))
        else:
            outline.paragraph(_text(element))


def _table_rows(table: Any) -> list[str]:
    """One line per row, cells separated by " | "."""
    rows = []
    for row in table.getElementsByType(_row_type()):
        cells = [one_line(_text(c)) for c in row.childNodes if getattr(c, "qname", None) == (_TABLE, "table-cell")]
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


def _row_type() -> Any:
    from odf.table import TableRow

    return TableRow
