"""File readers: one module per family of formats, chosen by the file name's suffix through one registry.

A reader is any object with the `base.Reader` shape (`name`, `extensions`, `extra`, `read`); `register_reader` adds
one (a user's own too), and `read_document_file` reads a file with the reader of its suffix. Built in: text
(`.txt`, `.md`, `.rst`, no suffix), html, records (`.jsonl`, `.json`, `.csv`, `.tsv`), mail (`.eml`, `.mbox`),
source code and configuration files, and, each with its package extra, pdf, docx, odt, epub and rtf
(docs/formats.md lists them all).
"""

from __future__ import annotations

from pathlib import Path

from offline_agent.errors import ConfigError
from offline_agent.retrieval.readers.base import Document, Fields, Reader, Section, SkipFile, decode_text
from offline_agent.retrieval.readers.epub import EPUBReader
from offline_agent.retrieval.readers.html import HTMLReader, html_to_text
from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits
from offline_agent.retrieval.readers.mail import MailReader
from offline_agent.retrieval.readers.opendocument import ODTReader
from offline_agent.retrieval.readers.pdf import PDFReader
from offline_agent.retrieval.readers.records import RecordsReader
from offline_agent.retrieval.readers.rtf import RTFReader
from offline_agent.retrieval.readers.source import SourceCodeReader
from offline_agent.retrieval.readers.text import TextReader, text_title
from offline_agent.retrieval.readers.word import DocxReader

READERS: dict[str, Reader] = {}


def register_reader(reader: Reader, *, replace: bool = False) -> Reader:
    """Read the files whose suffix is one of `reader.extensions` with `reader`; a suffix another reader has already
    is refused unless `replace`. Returns the reader."""
    if not isinstance(reader, Reader):
        raise ConfigError(f"{reader!r} is not a reader: it needs name, extensions, extra and read()")
    taken = {ext: READERS[ext].name for ext in reader.extensions if ext in READERS and READERS[ext] is not reader}
    if taken and not replace:
        raise ConfigError(f"reader {reader.name!r}: suffixes already read by another reader: {taken}")
    for ext in reader.extensions:
        READERS[ext] = reader
    return reader


def supported_extensions() -> frozenset[str]:
    """Every file name suffix a registered reader reads ("" for files without one)."""
    return frozenset(READERS)


def reader_for(path: Path) -> Reader | None:
    """The reader of the file at `path`, by its suffix; None for a suffix no reader reads."""
    return READERS.get(path.suffix.lower())


def read_document_file(path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
    """Documents in the file at `path` (its bytes are `data`) and notes on records skipped inside it; SkipFile
    when it cannot be read. A file of a suffix no reader reads (one named on the command line) is read as text.

    A reader that fails in any other way (a bug, a library's exception no reader expected, a user's reader) skips
    the file with what went wrong: no file may stop an index run."""
    reader = reader_for(path) or READERS[""]
    try:
        return reader.read(path, data, doc_id, fields)
    except SkipFile:
        raise
    except Exception as exc:  # RecursionError and MemoryError too: the file's objects are freed as this unwinds
        raise SkipFile(f"the {reader.name} reader failed ({type(exc).__name__}: {str(exc)[:80]})") from None


for _reader in (
    TextReader(), HTMLReader(), RecordsReader(), MailReader(), SourceCodeReader(),
    PDFReader(), DocxReader(), ODTReader(), EPUBReader(), RTFReader(),
):  # fmt: skip
    register_reader(_reader)

__all__ = [
    "DEFAULT_LIMITS",
    "READERS",
    "Document",
    "Fields",
    "ReadLimits",
    "Reader",
    "Section",
    "SkipFile",
    "decode_text",
    "html_to_text",
    "read_document_file",
    "reader_for",
    "register_reader",
    "supported_extensions",
    "text_title",
]
