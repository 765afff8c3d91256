"""The title table of an index: every document's title, for looking a document up by name, and for finding the
documents that a passage names (its links).

`best(entity)` is retrieve's lookup (an exact title, else the closest by BM25 over the titles). `mentions(text)`
finds the documents whose title a text names: the search tool shows them after the passages that name them, since
a question that goes through an entity ("the woman who portrayed Corliss Archer") is answered in the document of
that entity, and its name is written in the first document. A title counts as named when its words (without a
closing qualifier: "Kiss and Tell (1945 film)" is named by "Kiss and Tell") appear in the text as they are written
in the title, case included, on word boundaries, or in the possessive (encyclopaedic text names the next hop so:
"secretary of New York Governor Nelson Rockefeller's Committee"); the longest name wins where two overlap. A title
without a capital letter or digit never links ("forum"), so common words do not. A name shorter than SHORT_NAME
characters ("Ulm", "Naj", "K2") links only where it holds a capital letter ("17" does not) and is written as a name
of its own: not as a sentence's first word, and not beside another capitalised word that would make it part of a
longer name ("Oak Ridge"); a single character never does ("I", "A"). The mention table is built on first use, as
a hash of every title's word sequence (up to MAX_TITLE_WORDS words), and a text is read once, trying at each word
the sequences that start there: its cost grows with the text, not with the number of titles.
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from typing import Any

import numpy as np

MAX_TITLE_WORDS = 8
# Names shorter than this link only where they stand alone (module docstring). It was the shortest a link could be
# before: "Ulm", Albert Einstein's birth city in the sample corpus, never reached a run through his passage, nor
# could a check look its document up by name.
SHORT_NAME = 4
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")
# A name in a text may open with a bracket or quote and be followed by the punctuation that ends a clause.
_LEAD = "([{\"'“‘"
_CLOSING = ")]}\"'”’"
_POSSESSIVE = ("'s", "’s")
_TRAIL = ".,;:!?" + _CLOSING


def bare_title(title: str) -> str:
    """A title without its disambiguation: "Kiss and Tell (1945 film)" -> "Kiss and Tell"."""
    return _QUALIFIER.sub("", title) or title


def place_name(title: str) -> str | None:
    """The place a title of the form "PLACE, REGION" names ("McLean" for "McLean, Virginia", "Sullivan County" for
    "Sullivan County, New Hampshire"): the region is one capitalised name with no comma of its own and not the
    place again. None for any other title ("Yes, Yes, Yes", "Kiss and Tell (1945 film)")."""
    place, comma, region = bare_title(title).partition(", ")
    if not comma or "," in region or not region[:1].isupper() or region == place:
        return None
    return place


class TitleTable:
    """Every document title of one index, for exact and closest-title lookups by entity name.

    Rows are the documents in the order of their first passage id, so "lowest row" means "lowest passage id":
    the tie-break of both lookups. Exact matching compares titles case-insensitively with runs of spaces
    collapsed, through a sorted array of 64-bit hashes (a few bytes a title, not a dict of strings); it is cheap
    to build (about 0.1 s per 100,000 titles). The BM25 index over the titles costs about ten times more, so it is
    built only when a first entity has no exact title.
    """

    def __init__(self, titles: list[str], first_ids: np.ndarray, analyzer: Any = None) -> None:
        from offline_agent.retrieval.columns import StringColumn

        order = np.argsort(np.asarray(first_ids, dtype=np.int64), kind="stable")
        self.passage_ids = np.asarray(first_ids, dtype=np.int64)[order]
        ordered = [titles[i] for i in order.tolist()]
        hashes = np.fromiter((hash(_title_key(t)) for t in ordered), dtype=np.int64, count=len(ordered))
        self._hash_rows = np.argsort(hashes, kind="stable")  # stable: equal hashes stay in row order
        self._hashes = hashes[self._hash_rows]
        self._titles = StringColumn.from_strings(ordered)
        self._analyzer = analyzer
        self._bm25: Any = None
        self._named: dict[int, list[int]] | None = None
        self._places: dict[int, list[int]] | None = None
        self._lock = threading.Lock()
        self.version: tuple[int, int] | None = None

    @classmethod
    def from_index(cls, index: Any) -> TitleTable:
        """Read every document's title and first passage id from `index`."""
        titles, first_ids = _document_titles(index)
        return cls(titles, first_ids, getattr(index, "analyzer", None))

    def __len__(self) -> int:
        return len(self.passage_ids)

    def best(self, entity: str) -> tuple[int, float, str] | None:
        """(passage id, score, "exact" or "closest") for the title that best matches `entity`, or None.

        An exact title (case and spacing aside) wins, scored 1.0; otherwise the title with the highest BM25
        score for the entity's terms (at least one shared term), ties going to the lowest passage id.
        """
        key = _title_key(entity)
        wanted = np.int64(hash(key))
        low = int(np.searchsorted(self._hashes, wanted, side="left"))
        high = int(np.searchsorted(self._hashes, wanted, side="right"))
        for row in self._hash_rows[low:high].tolist():
            if _title_key(self._titles[row]) == key:
                return int(self.passage_ids[row]), 1.0, "exact"
        ids, scores = self._title_index().search_ids(entity, k=1)
        if not len(ids):
            return None
        return int(self.passage_ids[int(ids[0])]), float(scores[0]), "closest"

    def title(self, row: int) -> str:
        return self._titles[row]

    def mentions(self, text: str, exclude: set[str] | frozenset[str] = frozenset()) -> list[tuple[int, str]]:
        """(first passage id, title) of each document `text` names, in the order of first mention, once each;
        titles in `exclude` are left out (see the module docstring for what counts as naming a document). The
        longest name wins where names overlap: "Kiss and Tell" does not also name a document titled "Tell"."""
        named = self._name_index()
        words = text.split()
        found: list[tuple[int, str]] = []
        seen: set[str] = set(exclude)
        start = 0
        while start < len(words):
            first = words[start].lstrip(_LEAD)
            longest: tuple[int, list[tuple[int, str]]] | None = None
            for end in range(start, min(start + MAX_TITLE_WORDS, len(words))):
                written = " ".join([first, *words[start + 1 : end + 1]])
                # The name may end in a full stop of its own ("Edgar Kaiser Sr.") or be followed by punctuation,
                # or be written in the possessive ("Shirley Temple's").
                bare = written.rstrip(_TRAIL)
                owner = bare[:-2] if bare.endswith(_POSSESSIVE) else bare
                for candidate in dict.fromkeys((written, bare, owner)):
                    documents = self._rows_named(named, candidate, bare_title)
                    if documents and (len(candidate) >= SHORT_NAME or _stands_alone(words, start, end)):
                        longest = (end, documents)
            if longest is None:
                start += 1
                continue
            for passage_id, title in longest[1]:
                if title not in seen:
                    seen.add(title)
                    found.append((passage_id, title))
            start = longest[0] + 1
        return found

    def named(self, name: str, place: bool = False) -> list[tuple[int, str]]:
        """(first passage id, title) of the documents whose title, without its qualifier, is `name` exactly. With
        `place`, where none is, those titled `name` and a region after a comma (`place_name`: "McLean, Virginia"
        for "McLean"): an encyclopedia titles a place so, and a text (an answer) names it without the region."""
        found = self._rows_named(self._name_index(), name, bare_title)
        if found or not place:
            return found
        return self._rows_named(self._place_index(), name, place_name)

    def _rows_named(self, index: dict[int, list[int]], name: str, key: Any) -> list[tuple[int, str]]:
        """(first passage id, title) of the rows of `index` (name hash -> rows) whose `key(title)` is `name`."""
        rows = index.get(hash(name), ())
        return [(int(self.passage_ids[row]), self._titles[row]) for row in rows if key(self._titles[row]) == name]

    def _name_index(self) -> dict[int, list[int]]:
        with self._lock:
            if self._named is None:
                self._named = self._index_by(bare_title)
            return self._named

    def _place_index(self) -> dict[int, list[int]]:
        with self._lock:
            if self._places is None:
                self._places = self._index_by(place_name)
            return self._places

    def _index_by(self, key: Any) -> dict[int, list[int]]:
        """name hash -> rows, of every title whose `key(title)` is a linkable name of up to MAX_TITLE_WORDS words."""
        index: dict[int, list[int]] = {}
        for row, title in enumerate(self._titles.tolist()):
            name = key(title)
            if name is not None and _is_linkable(name) and len(name.split()) <= MAX_TITLE_WORDS:
                index.setdefault(hash(name), []).append(row)
        return index

    def _title_index(self) -> Any:
        with self._lock:
            if self._bm25 is None:
                from offline_agent.retrieval import BM25Index

                self._bm25 = BM25Index.build(self._titles.tolist(), analyzer=self._analyzer)
            return self._bm25


_TABLES: weakref.WeakKeyDictionary[Any, TitleTable] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def title_table(index: Any) -> TitleTable:
    """The title table of `index`: built on first use, then kept as long as the index object lives.

    An index changed since (add, delete) gets a fresh table. An index object that cannot be weakly referenced
    gets a new table each call, so the caller should keep it (CorpusSession does, for its run).
    """
    version = (int(getattr(index, "n_rows", 0)), len(index))
    with _TABLES_LOCK:  # tools may run in threads (the planner); build once
        try:
            table = _TABLES.get(index)
        except TypeError:
            table = None
        if table is not None and table.version == version:
            return table
        table = TitleTable.from_index(index)
        table.version = version
        with contextlib.suppress(TypeError):
            _TABLES[index] = table
        return table


def _title_key(text: str) -> str:
    return " ".join(text.casefold().split())


def _document_titles(index: Any) -> tuple[list[str], np.ndarray]:
    """Each document's title and its first live passage id.

    For a BM25Index this reads the passage table's flat arrays directly (one vectorized pass, no Passage
    objects: a million documents take about a second); any other index is walked passage by passage.
    """
    table = getattr(index, "_t", None)
    if isinstance(table, dict) and {"doc", "live", "doc_title"} <= table.keys():
        live_rows = np.flatnonzero(np.asarray(table["live"]))
        numbers, first = np.unique(np.asarray(table["doc"])[live_rows], return_index=True)
        all_titles = table["doc_title"].tolist()
        return [all_titles[n] for n in numbers.tolist()], live_rows[first].astype(np.int64)
    firsts: dict[str, tuple[int, str]] = {}
    for passage_id in index.ids():
        passage = index.passage(int(passage_id))
        if passage.doc_id not in firsts or passage.id < firsts[passage.doc_id][0]:
            firsts[passage.doc_id] = (int(passage.id), passage.title)
    pairs = sorted(firsts.values())
    return [title for _, title in pairs], np.asarray([pid for pid, _ in pairs], dtype=np.int64)


def _is_linkable(name: str) -> bool:
    """Whether a title's name can be named at all: it holds a capital letter or a digit; one shorter than
    SHORT_NAME characters needs two characters and a capital letter ("Ulm", "K2"; not "17", a count far more
    often than a title, nor "I")."""
    if len(name) < SHORT_NAME:
        return len(name) >= 2 and any(ch.isupper() for ch in name)
    return any(ch.isupper() or ch.isdigit() for ch in name)


def _stands_alone(words: list[str], start: int, end: int) -> bool:
    """Whether words[start..end] of a text are written as a name of their own: not a sentence's first words, and
    with no capitalised word joined to them on either side (a comma or other closing punctuation between two
    words parts them: "Ulm, Germany"). A capitalised word before them blocks even where it opens the sentence:
    "New Ulm" cannot be told from "In Ulm" without a list of words."""
    if _opens_sentence(words, start):
        return False
    before = words[start - 1].lstrip(_LEAD)
    if before[:1].isupper() and before[-1] not in _TRAIL:
        return False
    after = words[end + 1].lstrip(_LEAD) if end + 1 < len(words) else ""
    return not (after[:1].isupper() and words[end][-1] not in _TRAIL)


def _opens_sentence(words: list[str], at: int) -> bool:
    """Whether words[at] is the first word of a sentence: the text's first, or one after a word that ends one."""
    return at == 0 or words[at - 1].rstrip(_CLOSING)[-1:] in (".", "!", "?")


__all__ = ["MAX_TITLE_WORDS", "TitleTable", "bare_title", "place_name", "title_table"]
