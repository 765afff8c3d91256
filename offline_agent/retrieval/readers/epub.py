"""EPUB books through ebooklib (the `epub` extra): one document per chapter, in reading order.

A chapter starts at each file of the book's spine that its table of contents points to, and runs on through
the files the table does not name (a long chapter split in two files stays one document); a book without a
table of contents gives one document per spine file. One document per chapter rather than per book: a search
hit then names the chapter in its title, a passage never runs from the end of one chapter into the next, and
reading "the document" of a hit (the `lookup` tool) reads a chapter, not the whole book.

A chapter's title is "CHAPTER (BOOK)", with the title its table-of-contents entry gives; its sections carry the
path of that entry in the table (a part, then the chapter) and, under it, the headings (h1-h6) inside the
chapter. The navigation page is left out. A book whose chapters are encrypted (DRM: META-INF/encryption.xml
lists them; obfuscated fonts alone are fine) or a damaged zip is skipped with its reason.
"""

from __future__ import annotations

import io
import os.path
import warnings
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from offline_agent.retrieval.readers.archive import open_zip, read_member
from offline_agent.retrieval.readers.base import Document, Fields, PackageReader, SkipFile
from offline_agent.retrieval.readers.limits import ReadLimits
from offline_agent.retrieval.readers.outline import OutlineText, one_line
from offline_agent.retrieval.readers.xhtml import add_xhtml

_FONT_OBFUSCATION = {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
_FONTS = (".otf", ".ttf", ".woff", ".woff2")


class EPUBReader(PackageReader, format="epub", package="ebooklib"):
    """`.epub` through ebooklib."""

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        ebooklib = self.library("ebooklib")
        epub = self.library("ebooklib.epub")
        with open_zip(data, "EPUB", required=("META-INF/container.xml",), limits=fields.limits) as archive:
            _refuse_drm(archive)
        with self.reading():  # ebooklib and lxml on damaged books
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": False})
            book_title = one_line(next((value for value, _ in book.get_metadata("DC", "title")), "") or "")
            chapters = _chapters(book, ebooklib.ITEM_DOCUMENT, epub.EpubNav)
            title = book_title or path.stem
            docs = [_document(doc_id, title, chapter, fields.limits) for chapter in chapters]
        return [doc for doc in docs if doc.text], []


def _refuse_drm(archive: zipfile.ZipFile) -> None:
    """SkipFile when META-INF/encryption.xml says that anything but fonts is encrypted."""
    if "META-INF/encryption.xml" not in archive.namelist():
        return
    try:
        root = ElementTree.fromstring(read_member(archive, "META-INF/encryption.xml", "EPUB"))
    except ElementTree.ParseError:
        raise SkipFile("damaged EPUB (META-INF/encryption.xml is not well-formed XML)") from None
    for encrypted in root.iter("{http://www.w3.org/2001/04/xmlenc#}EncryptedData"):
        method = encrypted.find("{http://www.w3.org/2001/04/xmlenc#}EncryptionMethod")
        algorithm = method.get("Algorithm", "") if method is not None else ""
        reference = encrypted.find(".//{http://www.w3.org/2001/04/xmlenc#}CipherReference")
        uri = reference.get("URI", "") if reference is not None else ""
        if algorithm not in _FONT_OBFUSCATION and not uri.lower().endswith(_FONTS):
            raise SkipFile(f"DRM-protected EPUB (its content is encrypted: {uri or 'an entry'})")


def _toc_paths(toc: Any) -> dict[str, tuple[str, ...]]:
    """File -> the path of titles, in the table of contents, of the chapter that file starts.

    That is the first entry that links to the whole file, or an entry under it that links to the whole file too
    (a part whose link is its first chapter's file). A file linked only at places inside it (file#fragment: the
    sections of a chapter, or the chapters of a book in one file) gets the path those entries share, so that
    its own headings, not its first section's title, name what it holds.
    """
    whole: dict[str, tuple[str, ...]] = {}
    places: dict[str, list[tuple[str, ...]]] = {}

    def visit(entries: Any, parents: tuple[str, ...]) -> None:
        for entry in entries:
            node, children = entry if isinstance(entry, tuple) else (entry, ())
            title = one_line(getattr(node, "title", "") or "")
            path = (*parents, title) if title else parents
            href, _, fragment = unquote(getattr(node, "href", "") or "").partition("#")
            if href and path and fragment:
                places.setdefault(href, []).append(path)
            elif href and path and (href not in whole or path[: len(whole[href])] == whole[href]):
                whole[href] = path
            visit(children, path)

    visit(toc, ())
    shared = {href: os.path.commonprefix(paths) for href, paths in places.items() if href not in whole}
    return {**shared, **whole}


def _chapters(book: Any, document_type: int, nav_type: type) -> list[tuple[str, tuple[str, ...], list[Any]]]:
    """(first file, table-of-contents path, spine items) of each chapter, in reading order."""
    toc = _toc_paths(book.toc)
    chapters: list[tuple[str, tuple[str, ...], list[Any]]] = []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != document_type or isinstance(item, nav_type):
            continue
        name = unquote(item.get_name())
        if not toc or name in toc or not chapters:  # a file the table names, even with an empty path
            chapters.append((name, toc.get(name, ()), [item]))
        else:
            chapters[-1][2].append(item)
    return chapters


def _document(
    doc_id: str, book_title: str, chapter: tuple[str, tuple[str, ...], list[Any]], limits: ReadLimits
) -> Document:
    href, toc_path, items = chapter
    outline = OutlineText(base=toc_path)
    for item in items:
        # the bytes as stored: get_content() parses and writes them again
        add_xhtml(item.content or b"", outline, limits)
    name = toc_path[-1] if toc_path else outline.first_heading()
    title = f"{name} ({book_title})" if name and name != book_title else book_title
    return Document(f"{doc_id}:{href}", title, outline.text, sections=tuple(outline.sections))
