"""The passage table: what a search hit points to (text, title, source, offsets), kept in flat arrays.

A million passages as Python objects cost seconds to load and gigabytes of memory; as a few flat arrays (UTF-8
blobs plus offsets, `columns.StringColumn`) they load through mmap in microseconds, and a `Passage` object is
made only for the passages a caller asks for. This module needs no numpy, so a worker process that reads files
(parallel.py) starts without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from offline_agent.jsonio import fields_dict

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Passage:
    """One searchable unit: a whole short document or a chunk of a long one.

    `id` is stable for the life of an index (updates never renumber passages); `doc_id` names the source
    document (a file path relative to the ingested root, or the record id of a JSONL/JSON/CSV row);
    `start` and `end` are character offsets of `text` in that document's text. `heading` is the heading path of the
    section the passage sits in, from the outermost heading in (empty where the document has none), `line` the
    line of the document's text where the passage starts and `page` its page in a paged document (PDF); 0 where
    not known (a record of a JSONL file, an index written before positions were kept).
    """

    id: int
    doc_id: str
    title: str
    text: str
    source: str
    start: int
    end: int
    heading: tuple[str, ...] = ()
    line: int = 0
    page: int = 0

    def dict(self) -> dict[str, object]:
        """A JSON-ready copy."""
        return fields_dict(self)

    @property
    def indexed_text(self) -> str:
        """What the index tokenizes for this passage: its title (when it has one), the headings of its section below
        the title (the passage may not hold them: a long section's later passages), and its text."""
        below = heading_beyond_title(self.heading, self.title)
        return "\n".join([*([self.title] if self.title else []), *below, self.text])

    def with_id(self, new_id: int) -> Passage:
        """This passage under another id: what `dataclasses.replace(self, id=new_id)` gives, in a quarter of its
        time (a build renumbers every passage it reads)."""
        copy = object.__new__(Passage)
        copy.__dict__.update(self.__dict__, id=new_id)
        return copy

    def place(self) -> str:
        """Where the passage is, for people: "page 4" or "line 120" (empty where not known)."""
        if self.page:
            return f"page {self.page}"
        return f"line {self.line}" if self.line else ""

    def label(self) -> str:
        """`passage_label` of this passage."""
        return passage_label(self.title, self.heading)


def passage_label(title: str, heading: Sequence[str], shorten: Callable[[str], str] | None = None) -> str:
    """A passage's title, then the headings of its section beyond the title ("Built-in Types > Numeric Types >
    Additional Methods on Float"), each passed through `shorten` if given; the title alone where the heading path
    adds nothing to it."""
    below = heading_beyond_title(heading, title)
    if not below:
        return title
    return " > ".join([title, *(map(shorten, below) if shorten else below)])


def heading_beyond_title(heading: Sequence[str], title: str) -> tuple[str, ...]:
    """The heading path less its leading headings that only repeat the document's title (case and spacing aside):
    what a passage's place adds to its title."""
    wanted = " ".join(title.split()).casefold()
    at = 0
    while at < len(heading) and " ".join(heading[at].split()).casefold() == wanted:
        at += 1
    return tuple(heading[at:])


HEADING_SEPARATOR = "\n"  # between the headings of a path in the index's heading column


def join_heading(heading: Sequence[str]) -> str:
    """A heading path as one stored string (a heading's own line breaks become spaces)."""
    return HEADING_SEPARATOR.join(" ".join(h.split()) for h in heading)


def split_heading(stored: str) -> tuple[str, ...]:
    """The heading path of a stored string (`join_heading`'s inverse)."""
    return tuple(stored.split(HEADING_SEPARATOR)) if stored else ()


class SearchResult(NamedTuple):
    """Ranked hits: passage ids (int64), their scores (float32), and the passages, best first."""

    ids: np.ndarray
    scores: np.ndarray
    passages: list[Passage]
