"""The corpus tools: `search` (BM25 over the run's corpus), `lookup` (keyword lookup in the last document found)
and `retrieve` (the document whose title best matches an entity, KnowAgent's Retrieve action).

`lookup[keyword]` follows the ReAct paper: it returns the next sentence containing the keyword in the document
of the last search's (or retrieve's) top passage, one sentence per call, and says when there are no more. The
tools share one `CorpusSession`, which a run creates fresh so that lookups never leak between questions.

`retrieve[entity]` reads a table of every document title, built once per index on first use and kept while the
index lives (a hash table for exact matches, and a BM25 index over the titles alone for the closest match), so a
call never scans the titles. Building it costs one pass over the titles; an index changed by add or delete gets a
fresh table. Limits: a document is matched by its title only (an untitled document can never be retrieved), and
the passage returned is the document's first one (the lowest passage id).
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offline_agent.errors import ToolError

SEARCH_K = 3
PASSAGE_CHARS = 600
SNIPPETS = ("head", "sentences")


@dataclass(frozen=True)
class SearchSettings:
    """What a search shows the model.

    `snippet` "head": each passage's first PASSAGE_CHARS characters; "sentences": each passage's first sentence
    (in an encyclopedic text it says what the document is about) and the `sentences` - 1 others that share the
    most terms with the query, in their order, so more passages fit in the same Observation and the sentence that
    answers is less likely to be cut off. `title_boost`: a document whose title the query names (all of the
    title's terms are in the query) comes first, whatever its BM25 rank.
    """

    k: int = SEARCH_K
    snippet: str = "head"
    sentences: int = 3
    title_boost: bool = False

    def __post_init__(self) -> None:
        from offline_agent.errors import ConfigError

        if self.snippet not in SNIPPETS:
            raise ConfigError(f"unknown snippet kind {self.snippet!r}; choose from {list(SNIPPETS)}")
        if not 1 <= self.k <= 20:
            raise ConfigError("search k must be between 1 and 20")
        if self.sentences < 1:
            raise ConfigError("sentences per passage must be at least 1")


@dataclass
class CorpusSession:
    """The index plus what the last search found (the document lookup reads, and lookup cursors)."""

    index: Any
    settings: SearchSettings = field(default_factory=SearchSettings)
    question: str = ""  # the question of the run: "sentences" snippets favour sentences that bear on it too
    document_title: str | None = None
    sentences: list[str] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)
    _titles: TitleTable | None = field(default=None, repr=False)

    def tools(self) -> list[Any]:
        """The search and lookup tools over this session (retrieve is built by name: tools.build_tools)."""
        return [SearchTool(self), LookupTool(self)]

    def titles(self) -> TitleTable:
        """The title table of this session's index (built on first use, shared by every session of the index)."""
        if self._titles is None:
            self._titles = title_table(self.index)
        return self._titles

    def focus(self, passage: Any) -> None:
        """Make the document of `passage` the one lookup reads."""
        from offline_agent.retrieval import split_sentences

        parts = self.index.passages_of(passage.doc_id) or [passage]
        text = " ".join(part.text for part in parts)
        self.document_title = passage.title
        self.sentences = [text[start:end].strip() for start, end in split_sentences(text)]
        self.sentences = [sentence for sentence in self.sentences if sentence]
        self.cursors = {}


class _ThreadDetails:
    """`last_details` kept per thread, so calls run side by side (the planner's executor) each read their own."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def last_details(self) -> dict[str, Any]:
        return getattr(self._local, "details", {})

    @last_details.setter
    def last_details(self, value: dict[str, Any]) -> None:
        self._local.details = value


class SearchTool(_ThreadDetails):
    """`search[query]`: the top passages of the corpus for a few keywords."""

    name = "search"
    description = "finds the passages of the corpus that best match a few keywords (an entity or a topic)"
    schema = None
    example = "Eiffel Tower architect"

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        super().__init__()

    def __call__(self, query: str) -> str:
        query = query.strip()
        if not query:
            raise ToolError("empty search query")
        session = self.session
        settings = session.settings
        k = settings.k
        result = session.index.search(query, k=k)
        passages = list(result.passages)
        scores = [round(float(s), 4) for s in result.scores]
        boosted = self._named_title(query) if settings.title_boost else None
        if boosted is not None:
            others = [(p, s) for p, s in zip(passages, scores, strict=True) if p.id != boosted.id]
            passages = [boosted, *(p for p, _ in others)][:k]
            scores = [None, *(s for _, s in others)][:k]
        self.last_details = {
            "ids": [int(p.id) for p in passages],
            "titles": [p.title for p in passages],
            "scores": scores,
        }
        if boosted is not None:
            self.last_details["title_boost"] = boosted.title
        if not passages:
            return f"No passage matches {query!r}. Try other keywords."
        session.focus(passages[0])
        if settings.snippet == "sentences":
            analyzer = session.index.analyzer
            wanted = (set(analyzer.tokens(query)), set(analyzer.tokens(session.question)))
            texts = [_best_sentences(p.text, wanted, settings.sentences, analyzer) for p in passages]
        else:
            texts = [_clip(p.text, PASSAGE_CHARS) for p in passages]
        lines = (f"[{rank}] {p.title}: {text}" for rank, (p, text) in enumerate(zip(passages, texts, strict=True), 1))
        return "\n".join(lines)

    def _named_title(self, query: str) -> Any:
        """The first passage of the document whose title the query names, or None."""
        match = self.session.titles().best(query)
        if match is None:
            return None
        passage = self.session.index.passage(match[0])
        analyzer = self.session.index.analyzer
        title_terms = set(analyzer.tokens(bare_title(passage.title)))
        if match[2] == "exact" or (title_terms and title_terms <= set(analyzer.tokens(query))):
            return passage
        return None


class LookupTool(_ThreadDetails):
    """`lookup[keyword]`: the next sentence containing the keyword in the document of the last search."""

    name = "lookup"
    description = "returns the next sentence containing a keyword in the top document of the last search"
    schema = None
    example = "born"
    is_stateful = True  # the same call returns the next match, so repeats are not refused

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        super().__init__()

    def __call__(self, keyword: str) -> str:
        session = self.session
        keyword = keyword.strip()
        if not keyword:
            raise ToolError("empty lookup keyword")
        if session.document_title is None:
            raise ToolError("no document yet: use search first, then lookup")
        needle = keyword.lower()
        hits = [sentence for sentence in session.sentences if needle in sentence.lower()]
        self.last_details = {"titles": [session.document_title]}
        if not hits:
            return f"No sentence in {session.document_title!r} contains {keyword!r}."
        position = session.cursors.get(needle, 0)
        if position >= len(hits):
            return f"No more sentences in {session.document_title!r} contain {keyword!r}."
        session.cursors[needle] = position + 1
        return f"(Result {position + 1} / {len(hits)}) {hits[position]}"


class RetrieveTool(_ThreadDetails):
    """`retrieve[entity]`: the passage of the document whose title best matches an entity's name."""

    name = "retrieve"
    description = "returns the document whose title best matches a name (a person, place, work or thing)"
    schema = None
    example = "Marie Curie"

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        super().__init__()

    def __call__(self, entity: str) -> str:
        self.last_details = {}
        entity = entity.strip()
        if not entity:
            raise ToolError("empty entity name")
        match = self.session.titles().best(entity)
        if match is None:
            self.last_details = {"ids": [], "titles": [], "scores": [], "match": None}
            return f"No document title matches {entity!r}. Try search with other keywords."
        passage_id, score, kind = match
        passage = self.session.index.passage(passage_id)
        self.last_details = {
            "ids": [int(passage.id)],
            "titles": [passage.title],
            "scores": [round(score, 4)],
            "match": kind,
        }
        self.session.focus(passage)
        return f"{passage.title}: {_clip(passage.text, PASSAGE_CHARS)}"


class TitleTable:
    """Every document title of one index, for exact and closest-title lookups by entity name.

    Rows are the documents in the order of their first passage id, so "lowest row" means "lowest passage id":
    the tie-break of both lookups. Exact matching compares titles case-insensitively with runs of spaces
    collapsed, through a sorted array of 64-bit hashes (a few bytes a title, not a dict of strings); it is cheap
    to build (about 0.1 s per 100,000 titles). The BM25 index over the titles costs about ten times more, so it is
    built only when a first entity has no exact title.
    """

    def __init__(self, titles: list[str], first_ids: np.ndarray, analyzer: Any = None) -> None:
        from offline_agent.retrieval.passages import StringColumn

        order = np.argsort(np.asarray(first_ids, dtype=np.int64), kind="stable")
        self.passage_ids = np.asarray(first_ids, dtype=np.int64)[order]
        ordered = [titles[i] for i in order.tolist()]
        hashes = np.fromiter((hash(_title_key(t)) for t in ordered), dtype=np.int64, count=len(ordered))
        self._hash_rows = np.argsort(hashes, kind="stable")  # stable: equal hashes stay in row order
        self._hashes = hashes[self._hash_rows]
        self._titles = StringColumn.from_strings(ordered)
        self._analyzer = analyzer
        self._bm25: Any = None
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


def bare_title(title: str) -> str:
    """A title without its disambiguation: "Kiss and Tell (1945 film)" -> "Kiss and Tell"."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title) or title


def _best_sentences(text: str, wanted: tuple[set[str], set[str]], count: int, analyzer: Any) -> str:
    """The first sentence of `text` and the count - 1 others that share the most terms with the query (first) and
    the question (to break ties), in text order."""
    from offline_agent.retrieval import split_sentences

    sentences = [" ".join(text[start:end].split()) for start, end in split_sentences(text)]
    if len(sentences) <= count:
        return " ".join(sentences)
    query, question = wanted
    terms = [set(analyzer.tokens(sentence)) for sentence in sentences]
    overlap = [(len(query & t), len(question & t)) for t in terms]
    rest = sorted(range(1, len(sentences)), key=lambda i: (-overlap[i][0], -overlap[i][1], i))[: count - 1]
    chosen = sorted([0, *rest])
    out = []
    for position, index in enumerate(chosen):
        if position and index != chosen[position - 1] + 1:
            out.append("...")
        out.append(_clip(sentences[index], PASSAGE_CHARS // 2))
    return " ".join(out)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + " ..."
