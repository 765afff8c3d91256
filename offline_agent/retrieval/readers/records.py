"""Records: JSON Lines, JSON and CSV/TSV files, one document per record (a row's text, title and id fields).

Each record's text, title and id come from the fields `--text-field`, `--title-field` and `--id-field` name, or
the usual names (TEXT_FIELDS, TITLE_FIELDS, ID_FIELDS). A record that cannot be read (broken JSON, no text) is a
note, and the others are read. A .json file must hold a list of records, one record, or an object of records.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from offline_agent import jsonio
from offline_agent.retrieval.readers.base import Document, Fields, SkipFile, decode_text

TEXT_FIELDS = ("text", "contents", "content", "body", "passage", "paragraph", "abstract")
TITLE_FIELDS = ("title", "name", "heading")
ID_FIELDS = ("_id", "id", "docid", "doc_id", "pid")


class RecordsReader:
    """`.jsonl`, `.ndjson`, `.json`, `.csv` and `.tsv`: one document per record."""

    name = "records"
    extensions = frozenset({".jsonl", ".ndjson", ".json", ".csv", ".tsv"})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        ext = path.suffix.lower()
        if ext in (".jsonl", ".ndjson"):
            text, bad_lines = _jsonl_text(data)
            docs, notes = _read_jsonl(text, doc_id, fields)
            return docs, bad_lines + notes
        text = decode_text(data)
        if ext == ".json":
            return _read_json(text, doc_id, fields)
        return _read_csv(text, doc_id, fields, delimiter="\t" if ext == ".tsv" else ",")


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
    return Document(str(rid) if rid not in (None, "") else fallback_id, str(title or ""), text, numbered_lines=False)


def _jsonl_text(data: bytes) -> tuple[str, list[str]]:
    """The text of a JSON Lines file, and a note for each line that is not UTF-8 (left blank in the text, so that
    the others keep their numbers): one such line loses only its own record."""
    try:
        return decode_text(data), []
    except SkipFile as exc:
        if not str(exc).startswith("not valid UTF-8"):
            raise
    lines, notes = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        try:
            lines.append(line.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError as bad:
            notes.append(f"line {number}: not valid UTF-8 (byte 0x{line[bad.start]:02x} at column {bad.start + 1})")
            lines.append("")
    return "\n".join(lines), notes


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
