"""From a read document to its passages: cut at its section headings, then into chunks, each with its place.

A passage never runs across a heading, so that the heading path it records is the section it sits in: the text is
cut where each section starts, and each part is chunked by `sentences.chunk_spans`. A section that holds nothing
but its heading (a chapter's title right before its first subsection's) joins the section after it rather than
becoming a passage of a few words. A document without sections (a JSONL record, a plain text file without
headings) is chunked whole, as before sections existed, so its passages are the same.

Each passage records its heading path, the line of the document's text it starts on (1-based; 0 for a record,
whose line means nothing) and, in a paged document, its page.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right

from offline_agent.retrieval.passages import Passage
from offline_agent.retrieval.readers.base import Document
from offline_agent.retrieval.sentences import chunk_spans

_WORD = re.compile(r"\w+")


def document_passages(doc: Document, source: str, size: int, overlap: int, first_id: int = 0) -> list[Passage]:
    """The passages of `doc` (ids from `first_id`), chunked `size` words at most with `overlap` words shared."""
    passages: list[Passage] = []
    line, counted = 1, 0
    for seg_start, seg_end, path in _segments(doc):
        body = doc.text[seg_start:seg_end]
        for start, end in chunk_spans(body, size, overlap):
            s, e = start + seg_start, end + seg_start
            line += doc.text.count("\n", counted, s)  # starts only grow: each line break is counted once
            counted = s
            page = bisect_right(doc.pages, s) if doc.pages else 0
            number = line if doc.numbered_lines else 0
            pid = first_id + len(passages)
            passages.append(Passage(pid, doc.doc_id, doc.title, doc.text[s:e], source, s, e, path, number, page))
    return passages


def _segments(doc: Document) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, heading path) of the parts of the body between section starts, heading-only parts joined to
    the part after them."""
    text, body_start = doc.text, doc.body_start
    if not doc.sections:
        return [(body_start, len(text), ())]
    before = [s for s in doc.sections if s.start <= body_start]
    first = before[-1] if before else None
    cuts = [(body_start, first.path if first else ())]
    cuts += [(s.start, s.path) for s in doc.sections if body_start < s.start < len(text)]
    # Where a heading opens its part (not so for the body's start when the title above it was taken out).
    headed = {s.start for s in doc.sections}
    bounds = [c[0] for c in cuts[1:]] + [len(text)]
    out: list[tuple[int, int, tuple[str, ...]]] = []
    carried: int | None = None  # where a heading-only part began, joined to the next part
    for (start, path), end in zip(cuts, bounds, strict=True):
        if start >= end:
            continue
        heading_only = end < len(text) and _only_heading(text, start, end, path if start in headed else ())
        if carried is not None:
            start, carried = carried, None
        if heading_only:
            carried = start
            continue
        out.append((start, end, path))
    return out


def _only_heading(text: str, start: int, end: int, path: tuple[str, ...]) -> bool:
    """Whether text[start:end] holds no word beyond its own heading's (the last of `path`; none for an empty path)."""
    own = len(_WORD.findall(path[-1])) if path else 0
    words = _WORD.finditer(text, start, end)
    return sum(1 for _ in itertools.islice(words, own + 1)) <= own
