"""Duplicate documents: the same text under two paths is indexed once, and the other paths are noted.

Two kinds are recognised:
- files whose documents read to the same titles and texts (the same page saved twice, a copied folder): the
  `content` key, a hash of what the reader made of the file, is equal;
- Sphinx's copies of each page's source (`_sources/library/os.rst.txt` beside `library/os.html`): a file under a
  `_sources` folder whose name, less `.txt` and the source's own suffix, is a page indexed from the folder that
  holds `_sources`. The copy is the page's text with its markup, so it is a duplicate though its bytes differ.

Which copy is indexed: one already in the index, then one indexed before an update, then the one nearest the
root of the walk, then the first in its order; a Sphinx source copy never. The others are recorded in the index's
record of files with `duplicate_of` naming the file indexed in their place, so that `--update` can read them
again when that file changes or goes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from offline_agent.retrieval.readers.base import Document

SOURCES_FOLDER = "_sources"
SOURCE_SUFFIXES = (".rst", ".md", ".txt", ".ipynb", ".markdown")


def content_key(docs: Sequence[Document]) -> str:
    """A hash of the titles and texts of a file's documents: equal for two files that read the same."""
    digest = hashlib.sha256()
    for doc in docs:
        digest.update(doc.title.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
        digest.update(doc.text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x01")
    return digest.hexdigest()[:32]


def source_copy_of(source: str) -> str | None:
    """The page (as a path like `source`) that a Sphinx `_sources/...` file is the source of, or None."""
    path = PurePath(source)
    parts = path.parts
    if SOURCES_FOLDER not in parts[:-1] or path.suffix.lower() != ".txt":
        return None
    at = len(parts) - 1 - parts[::-1].index(SOURCES_FOLDER)  # the innermost _sources folder
    rest = PurePath(*parts[at + 1 :])
    stem = rest.with_suffix("")  # "os.rst.txt" -> "os.rst"; an older Sphinx wrote "os.txt"
    if stem.suffix.lower() in SOURCE_SUFFIXES:
        stem = stem.with_suffix("")
    return str(PurePath(*parts[:at]) / stem.with_suffix(stem.suffix + ".html"))


@dataclass(frozen=True)
class Candidate:
    """A file read for the index: its source path, its content key, and whether it was indexed before (an update)."""

    source: str
    key: str
    was_indexed: bool = False


def find_duplicates(candidates: Sequence[Candidate], indexed: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Which of `candidates` (in the walk's order) are duplicates, each mapped to the file indexed in its place.

    `indexed` holds the record (with its `content` key) of every file that stays in the index as it is.
    """
    owner: dict[str, str] = {}
    for source, record in indexed.items():
        if record.get("content") and not record.get("duplicate_of"):
            owner.setdefault(record["content"], source)
    out: dict[str, str] = {}
    copies = [c for c in candidates if source_copy_of(c.source) is not None]
    others = [c for c in candidates if source_copy_of(c.source) is None]
    # Files indexed before an update keep their place before new ones claim a text, then the one nearest the root
    # ("notes.md" before "backup/notes.md"), then the first in the walk.
    for candidate in sorted(others, key=lambda c: (not c.was_indexed, len(PurePath(c.source).parts))):
        first = owner.setdefault(candidate.key, candidate.source)
        if first != candidate.source:
            out[candidate.source] = first
    pages = set(indexed) | {c.source for c in others}  # a page duplicating another still has its source copy
    for candidate in copies:
        page = source_copy_of(candidate.source)
        if page in pages:
            out[candidate.source] = page
        else:
            first = owner.setdefault(candidate.key, candidate.source)
            if first != candidate.source:
                out[candidate.source] = first
    return out


def twins_to_read(records: dict[str, dict[str, Any]], reread: Iterable[str]) -> set[str]:
    """The files recorded as duplicates of a file that is read again or gone (and of those, and so on): their own
    bytes may be unchanged, but the file indexed in their place is no longer what it was."""
    changed = set(reread)
    out: set[str] = set()
    while True:
        more = {s for s, r in records.items() if r.get("duplicate_of") in changed and s not in out and s not in changed}
        if not more:
            return out
        out |= more
        changed |= more
