"""Blocks of text a corpus's pages all repeat (a footer, a version banner, an "Edit this page" line), found from the
corpus itself and left out of its passages.

The HTML reader drops what a page marks up as chrome (`nav`, `footer`, a class that names it); a site that writes
its footer as a plain `<p>`, a folder of Markdown notes that each end in the same copyright line, or text files
under one banner keep theirs, and a search for a word of it finds every page. No list of sites is kept: the blocks
are found by comparing what the readers made of the pages, whatever their format. The rule:

- a block is a paragraph of a page's body (lines up to a blank line: the HTML reader ends every block element
  with one), compared with its spaces collapsed, its case and its digits kept: "New in version 3.2." and "New in
  version 3.3." are two blocks (and a footer that carries each page's own date is not found);
- only the first and the last `EDGE_BLOCKS` paragraphs of a page's body are looked at: a site puts its banners
  above the content and its footers below, while an annotation that a manual's entries repeat through a page is
  its content ("Part of the Stable ABI.", on 38 of the 64 pages of the Python manual's C API, is in their first
  or last paragraphs on 21);
- a block counts with `MIN_WORDS` words or more (a repeated "See also" is a page's structure, not a site's
  chrome), at most `MAX_BLOCK_CHARS` characters once its spaces are collapsed, and when it is no heading (a
  paragraph where a section starts whose heading it holds);
- a block is boilerplate when the pages that hold it are as many and as much of their folder as a title's affix
  must be (`boilerplate.repeated_enough`): at least `MIN_PAGES`, and more than half of the pages of the deepest
  folder above them all. A corpus of fewer than `MIN_PAGES` pages is never changed;
- a document loses its boilerplate blocks, and a paragraph without a letter or digit next to one (the rule "---"
  above a Markdown footer), unless fewer than `MIN_WORDS` words would be left of its body: a page made only of
  the footer (or of the footer and a "Note" label) keeps it, and stays searchable as it is.

Pages are the files read whose reader gives documents of lines (pages, notes, messages; not the rows of a JSON,
JSONL or CSV file, whose text is a field), each counted once per block however many of its documents hold it, and
only where it is indexed (a file whose text another file holds is not counted again). A block left out leaves its
line breaks, so that the lines of the passages after it, which an answer's sources show, are still those of the
text the reader made; the offsets of sections and pages move with the text.

Each page's record in the index keeps the keys of its blocks (`blocks`: hashes of KEY_BYTES bytes, in hex), so
that `--update` counts the blocks of the pages it does not open; where the boilerplate it finds differs from the
index's, the pages that hold a block that came or went are read again, so that an updated index equals a fresh
build. A fresh build reads the pages that hold boilerplate twice: once to find it, once to leave it out.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from offline_agent.retrieval.boilerplate import MIN_PAGES, folder_counts, repeated_enough
from offline_agent.retrieval.readers import read_document_file
from offline_agent.retrieval.readers.base import Document, Fields, Section, SkipFile

EDGE_BLOCKS = 4
MIN_WORDS = 3
MAX_BLOCK_CHARS = 2000
KEY_BYTES = 8
# A paragraph: lines up to a blank one, without the spaces around it.
_PARAGRAPH = re.compile(r"\S(?:.*\S)?(?:[ \t\r\f\v]*\n[ \t\r\f\v]*\S(?:.*\S)?)*")
_WORD = re.compile(r"\w+")


def normalized(text: str) -> str:
    """A block's text as it is compared: spaces (line breaks too) collapsed to one."""
    return " ".join(text.split())


def block_key(text: str) -> str:
    """The key of a block (its `normalized` text): a hash of KEY_BYTES bytes, in hex."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=KEY_BYTES).hexdigest()


def edge_paragraphs(doc: Document) -> list[tuple[int, int]]:
    """(start, end) of the first and the last EDGE_BLOCKS paragraphs of `doc`'s body, in order."""
    paragraphs = (m.span() for m in _PARAGRAPH.finditer(doc.text, doc.body_start))
    head = list(itertools.islice(paragraphs, EDGE_BLOCKS))
    return head + list(deque(paragraphs, maxlen=EDGE_BLOCKS))


def page_blocks(doc: Document) -> list[tuple[int, int, str]]:
    """(start, end, key) of each block of `doc`'s body that may be boilerplate (see the module's rule), in order."""
    text, sections = doc.text, doc.sections
    starts = [s.start for s in sections]
    out = []
    for start, end in edge_paragraphs(doc):
        if end - start > 4 * MAX_BLOCK_CHARS:  # too long whatever its spaces: not worth collapsing them
            continue
        words = normalized(text[start:end])
        if len(words) > MAX_BLOCK_CHARS or len(_WORD.findall(words)) < MIN_WORDS:
            continue
        if _is_heading(words, sections, starts, start, end):
            continue
        out.append((start, end, block_key(words)))
    return out


def _is_heading(words: str, sections: Sequence[Section], starts: list[int], start: int, end: int) -> bool:
    """Whether a section starts in text[start:end] and the block holds its heading (a section that starts where a
    description list ended has the heading of the section around the list, which the block after it does not)."""
    for at in range(bisect_left(starts, start), bisect_left(starts, end)):
        path = sections[at].path
        if path and normalized(path[-1]) in words:
            return True
    return False


def page_keys(docs: Iterable[Document]) -> list[str] | None:
    """The keys of the blocks of a file's documents of lines, distinct and sorted; None where the file has no such
    document (the rows of a JSONL file: no page)."""
    keys: set[str] = set()
    page = False
    for doc in docs:
        if doc.numbered_lines:
            page = True
            keys.update(key for _, _, key in page_blocks(doc))
    return sorted(keys) if page else None


@dataclass(frozen=True)
class BlockBoilerplate:
    """The blocks a corpus's pages repeat: each one's key (hex), its text (spaces collapsed) and how many pages hold
    it, most pages first."""

    blocks: tuple[tuple[str, str, int], ...] = ()
    _keys: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", frozenset(key for key, _, _ in self.blocks))

    def __bool__(self) -> bool:
        return bool(self.blocks)

    def keys(self) -> frozenset[str]:
        """The keys of the blocks (what passages depend on)."""
        return self._keys

    def strip(self, doc: Document) -> Document:
        """`doc` less its boilerplate blocks, each but for its line breaks; `doc` itself where it holds none, or
        where fewer than MIN_WORDS words would be left of its body."""
        if not self._keys or not doc.numbered_lines:
            return doc
        keyed = {(start, end) for start, end, key in page_blocks(doc) if key in self._keys}
        if not keyed:
            return doc
        text = doc.text
        found = _with_rules(text, edge_paragraphs(doc), keyed)
        pieces, at = [], 0
        cut_ends, removed = [], []  # where each cut ends in the old text, and the characters gone up to there
        gone = 0
        for start, end in found:
            breaks = text.count("\n", start, end)
            pieces += [text[at:start], "\n" * breaks]
            gone += end - start - breaks
            cut_ends.append(end)
            removed.append(gone)
            at = end
        pieces.append(text[at:])
        new_text = "".join(pieces)

        def moved(offset: int) -> int:
            """The offset in the new text of `offset` in the old (the start of a cut for one inside it)."""
            n = bisect_right(cut_ends, offset)
            before = removed[n - 1] if n else 0
            if n < len(found) and found[n][0] < offset:  # inside the next cut: where that cut now is
                return found[n][0] - before
            return offset - before

        body_start = moved(doc.body_start)
        if sum(1 for _ in itertools.islice(_WORD.finditer(new_text, body_start), MIN_WORDS)) < MIN_WORDS:
            return doc  # a page of boilerplate (and a label: Sphinx's "Note" above it) is kept whole
        sections = tuple(Section(moved(s.start), s.path) for s in doc.sections)
        return replace(doc, text=new_text, body_start=body_start, sections=sections, pages=tuple(map(moved, doc.pages)))

    def to_dict(self) -> dict[str, Any]:
        """What the index records (`index info` shows it)."""
        return {"blocks": [{"text": text, "pages": n, "key": key} for key, text, n in self.blocks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> BlockBoilerplate:
        """The blocks an index recorded (none for an index written before they were looked for)."""
        blocks = (data or {}).get("blocks") or ()
        return cls(tuple((str(b["key"]), str(b["text"]), int(b["pages"])) for b in blocks))


def _with_rules(text: str, edges: list[tuple[int, int]], cuts: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """The paragraphs `cuts` among `edges`, with each paragraph of no letter or digit next to one of them (the rule
    "---" above a Markdown footer goes with it), in order."""
    out = []
    for at, (start, end) in enumerate(edges):
        if (start, end) in cuts:
            out.append((start, end))
            continue
        if _WORD.search(text, start, end):
            continue
        before = edges[at - 1] if at else None
        after = edges[at + 1] if at + 1 < len(edges) else None
        if (before in cuts and not text[before[1] : start].strip()) or (
            after in cuts and not text[end : after[0]].strip()
        ):
            out.append((start, end))
    return out


def find_blocks(pages: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """The keys of the boilerplate blocks of pages (document id, a path with "/", -> the keys of its blocks, each
    once), with the number of pages that hold each, by the module's rule."""
    if len(pages) < MIN_PAGES:
        return {}
    pages = {doc_id: list(keys) for doc_id, keys in pages.items()}
    counts = Counter(key for keys in pages.values() for key in keys)
    common = {key for key, n in counts.items() if n >= MIN_PAGES}
    if not common:
        return {}
    holders: dict[str, list[str]] = {}
    for doc_id, keys in pages.items():
        for key in keys:
            if key in common:
                holders.setdefault(key, []).append(doc_id)
    folders = folder_counts(pages)
    return {key: len(ids) for key, ids in holders.items() if repeated_enough(ids, folders)}


def recorded_pages(files: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """The pages of an index's records of its files (document id -> the keys of its blocks): files that were read
    with their blocks looked for, that hold documents of lines and that are indexed (no `duplicate_of`)."""
    return {
        str(record["doc_id"]): record["blocks"]
        for record in files.values()
        if isinstance(record.get("blocks"), list) and not record.get("duplicate_of")
    }


def holding(files: Mapping[str, Mapping[str, Any]], keys: Iterable[str]) -> list[str]:
    """The sources of the indexed pages (as in `recorded_pages`) that hold a block of `keys`, in the records' order."""
    wanted = set(keys)
    if not wanted:
        return []
    return [
        source
        for source, record in files.items()
        if isinstance(record.get("blocks"), list)
        and not record.get("duplicate_of")
        and not wanted.isdisjoint(record["blocks"])
    ]


def boilerplate_of(found: Mapping[str, int], texts: Mapping[str, str]) -> BlockBoilerplate:
    """The BlockBoilerplate of the keys `found` (-> their pages), with their texts, most pages first."""
    blocks = sorted(((key, texts[key], n) for key, n in found.items()), key=lambda b: (-b[2], b[1], b[0]))
    return BlockBoilerplate(tuple(blocks))


def block_texts(path: Path, doc_id: str, fields: Fields, keys: Set[str]) -> dict[str, str]:
    """The texts (spaces collapsed) of the blocks of `keys` that the file at `path` holds, read again ({} where it
    cannot be)."""
    try:
        docs, _ = read_document_file(path, path.read_bytes(), doc_id, fields)
    except (OSError, SkipFile):
        return {}
    found = {}
    for doc in docs:
        if doc.numbered_lines:
            for start, end, key in page_blocks(doc):
                if key in keys:
                    found[key] = normalized(doc.text[start:end])
    return found
