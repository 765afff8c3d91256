"""Readers that turn one file's bytes into documents: plain text, Markdown, reStructuredText, HTML, JSON/JSONL
records, CSV/TSV rows, and PDF (through pypdf when it is installed).

Each reader returns `Document`s (id, title, text, where the body starts) and notes on what it skipped inside
the file (a broken JSONL line, a row without text). A file that cannot be read at all raises `SkipFile` with
the reason shown to the user. Limits: HTML is reduced to its visible text with the standard library's parser
(no layout); PDF text is what pypdf extracts, page by page; .json files must hold a list of records, one
record, or an object of records.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from offline_agent import jsonio

TEXT_FIELDS = ("text", "contents", "content", "body", "passage", "paragraph", "abstract")
TITLE_FIELDS = ("title", "name", "heading")
ID_FIELDS = ("_id", "id", "docid", "doc_id", "pid")

TEXT_EXTENSIONS = {".txt", ".text", ".md", ".markdown", ".rst", ""}
HTML_EXTENSIONS = {".html", ".htm", ".xhtml"}
RECORD_EXTENSIONS = {".jsonl", ".ndjson", ".json", ".csv", ".tsv"}
PDF_EXTENSIONS = {".pdf"}
SUPPORTED_EXTENSIONS = TEXT_EXTENSIONS | HTML_EXTENSIONS | RECORD_EXTENSIONS | PDF_EXTENSIONS


class SkipFile(Exception):
    """A file that is skipped as a whole; the message is the reason."""


@dataclass(frozen=True)
class Fields:
    """Which record fields hold the text, the title and the id (None: try the usual names)."""

    text: str | None = None
    title: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class Document:
    """One source document before chunking; `body_start` is where the text to index starts (after a title)."""

    doc_id: str
    title: str
    text: str
    body_start: int = 0


def read_document_file(path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
    """Documents in the file at `path` (its bytes are `data`) and notes on records skipped inside it."""
    ext = path.suffix.lower()
    if ext in PDF_EXTENSIONS:
        return [_read_pdf(path, data, doc_id)], []
    text = decode_text(data)
    if ext in HTML_EXTENSIONS:
        title, body = html_to_text(text)
        return [Document(doc_id, title or path.stem, body)], []
    if ext in (".jsonl", ".ndjson"):
        return _read_jsonl(text, doc_id, fields)
    if ext == ".json":
        return _read_json(text, doc_id, fields)
    if ext in (".csv", ".tsv"):
        return _read_csv(text, doc_id, fields, delimiter="\t" if ext == ".tsv" else ",")
    title, body_start = text_title(text, ext)
    return [Document(doc_id, title or path.stem, text, body_start)], []


def decode_text(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) text, else SkipFile with the reason."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise SkipFile("not valid UTF-16 despite its byte-order mark") from None
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file (NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


_MD_HEADING = re.compile(r"[ \t]*#{1,6}[ \t]+(.+?)[ \t#]*$")
_RST_UNDERLINE = re.compile(r"""([=\-~^"'`*+#:.])\1{2,}[ \t]*$""")


def text_title(text: str, ext: str) -> tuple[str, int]:
    """A title from a leading Markdown heading or reStructuredText title, and where the body starts."""
    pos = len(text) - len(text.lstrip())
    lines = text[pos:].split("\n", 3)
    first = lines[0].rstrip("\r")
    m = _MD_HEADING.match(first)
    if m and ext in (".md", ".markdown", ".txt", ".text", ""):
        return m.group(1).strip(), pos + len(lines[0]) + (1 if len(lines) > 1 else 0)
    if ext == ".rst":
        # "Title\n=====" or an overlined "=====\nTitle\n=====".
        if len(lines) > 1 and first.strip() and _RST_UNDERLINE.match(lines[1].rstrip("\r")):
            return first.strip(), pos + len(lines[0]) + len(lines[1]) + 2
        if len(lines) > 2 and _RST_UNDERLINE.match(first) and _RST_UNDERLINE.match(lines[2].rstrip("\r")):
            return lines[1].strip(), pos + sum(len(x) + 1 for x in lines[:3])
    return "", 0


class _HTMLText(HTMLParser):
    _SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
    _HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
    _BLOCK = _HEADINGS | {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header"}
    _BLOCK |= {"footer", "blockquote", "pre", "hr", "dd", "dt", "nav", "aside", "main", "figure"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self._skip = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self._skip += 1
        if tag == "title":
            self._in_title = True
        if tag == "h1":
            self._in_h1 = True
        if tag in self._BLOCK:
            self.parts.append("\n\n" if tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6") else "\n")

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag == "title":
            self._in_title = False
        if tag == "h1":
            self._in_h1 = False
        if tag in self._BLOCK:
            self.parts.append("\n\n" if tag in ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6") else "\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._skip:
            return
        if self._in_h1:
            self.h1_parts.append(data)
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, visible text) of an HTML page: no tags, scripts or styles; blank lines between paragraphs."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" ?\n ?", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    title = " ".join("".join(parser.title_parts).split()) or " ".join("".join(parser.h1_parts).split())
    return title, text


def _read_pdf(path: Path, data: bytes, doc_id: str) -> Document:
    try:
        import pypdf
    except ImportError:
        raise SkipFile("PDF support needs pypdf (pip install pypdf)") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise SkipFile("encrypted PDF")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except SkipFile:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise SkipFile(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:80]})") from None
    return Document(doc_id, str(meta_title).strip() or path.stem, "\n\n".join(pages))


def _record(row: Any, fields: Fields, fallback_id: str) -> Document | str:
    """A Document from one record, or the reason it was skipped."""
    if isinstance(row, jsonio.JSONReadError):
        return str(row)
    try:
        return _record_fields(row, fields, fallback_id)
    except RecursionError:  # str() of a list nested almost as deeply as json could read
        return "a field nested too deeply to read"


def _record_fields(row: Any, fields: Fields, fallback_id: str) -> Document | str:
    if not isinstance(row, dict):
        return f"not a JSON object ({type(row).__name__})"
    text_key = fields.text or next((f for f in TEXT_FIELDS if f in row), None)
    if text_key is None or text_key not in row:
        want = fields.text or "/".join(TEXT_FIELDS[:3])
        have = ", ".join(sorted(map(str, row))[:6])
        return f"no {want!r} field (fields: {have}); choose one with --text-field"
    text = row[text_key]
    if text is None:
        return f"{text_key!r} is null"
    if isinstance(text, list):
        text = " ".join(str(s).strip() for s in text if s is not None)
    elif not isinstance(text, str):
        text = str(text)
    if not text.strip():
        return f"{text_key!r} is empty"
    title_key = fields.title or next((f for f in TITLE_FIELDS if f in row), None)
    title = row.get(title_key) if title_key else None
    id_key = fields.id or next((f for f in ID_FIELDS if f in row), None)
    rid = row.get(id_key) if id_key else None
    return Document(str(rid) if rid not in (None, "") else fallback_id, str(title or ""), text)


def _read_jsonl(text: str, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
    docs, notes = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = jsonio.loads(line)
        except jsonio.JSONReadError as exc:
            notes.append(f"line {number}: " + (f"invalid JSON ({exc.reason})" if exc.kind == "syntax" else str(exc)))
            continue
        doc = _record(row, fields, f"{doc_id}:{number}")
        if isinstance(doc, str):
            notes.append(f"line {number}: {doc}")
        else:
            docs.append(doc)
    return docs, notes


def _read_json(text: str, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
    try:
        data = jsonio.loads(text)
    except jsonio.JSONReadError as exc:
        if exc.kind == "syntax":
            raise SkipFile(str(exc)) from None
        data = _members_or_skip(text, fields)  # one member too deep or too long: read the others
    rows: Iterator[tuple[str, Any]]
    if isinstance(data, list):
        rows = ((f"{doc_id}:{i}", r) for i, r in enumerate(data))
    elif isinstance(data, dict) and (fields.text in data if fields.text else any(f in data for f in TEXT_FIELDS)):
        rows = iter([(doc_id, data)])
    elif isinstance(data, dict) and data and all(isinstance(v, (dict, jsonio.JSONReadError)) for v in data.values()):
        rows = ((str(k), dict(v, **{"_id": v.get("_id", k)}) if isinstance(v, dict) else v) for k, v in data.items())
    else:
        raise SkipFile("no records (expected a list of objects, one object, or an object of objects)")
    docs, notes = [], []
    for fallback, row in rows:
        doc = _record(row, fields, fallback)
        if isinstance(doc, str):
            notes.append(f"record {fallback}: {doc}")
        else:
            docs.append(doc)
    return docs, notes


def _members_or_skip(text: str, fields: Fields) -> Any:
    """A top-level array or object of records read member by member: an unreadable member stays in its place
    as a JSONReadError (`_record` turns it into a note); a file that is one record is skipped as a whole."""
    try:
        kind, members = jsonio.loads_members(text)
    except jsonio.JSONReadError as exc:
        raise SkipFile(str(exc)) from None
    if kind == "array":
        return [value for _, value in members]
    names = {str(key) for key, _ in members}
    if (fields.text in names) if fields.text else any(f in names for f in TEXT_FIELDS):
        bad = next(value for _, value in members if isinstance(value, jsonio.JSONReadError))
        raise SkipFile(str(bad))
    return dict(members)


def _read_csv(text: str, doc_id: str, fields: Fields, delimiter: str) -> tuple[list[Document], list[str]]:
    csv.field_size_limit(1 << 30)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    text_key = fields.text or next((f for f in TEXT_FIELDS if f in header), None)
    if text_key is None or text_key not in header:
        cols = ", ".join(header[:8]) or "none"
        raise SkipFile(f"no text column (columns: {cols}); choose one with --text-field")
    docs, notes = [], []
    try:
        for number, row in enumerate(reader, 2):
            clean = {k: v for k, v in row.items() if k is not None}
            doc = _record(clean, Fields(text_key, fields.title, fields.id), f"{doc_id}:{number}")
            if isinstance(doc, str):
                notes.append(f"row {number}: {doc}")
            else:
                docs.append(doc)
    except csv.Error as exc:
        notes.append(f"row {reader.line_num}: {exc}; rest of file skipped")
    return docs, notes
