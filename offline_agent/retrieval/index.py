"""BM25Index: build, search, update, save and load a BM25 index over passages.

The index owns three things: the analyzer and scoring constants (saved with it), the passage table
(`columns.StringColumn`s and flat arrays, one row per passage id) and the postings (`postings.Postings`).
Passage ids are row numbers; they never change for the life of an index, so a deleted passage leaves a dead
row whose text is dropped, and added passages get new ids at the end. Any change recomputes every weight from
the stored term frequencies (N and the average length change with it), so an updated index scores exactly like
a fresh build of the same passages, without tokenizing the old text again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline_agent.errors import RetrievalError
from offline_agent.retrieval import storage
from offline_agent.retrieval.analyzer import Analyzer
from offline_agent.retrieval.checks import check_index_arrays
from offline_agent.retrieval.checksums import PendingChecks, lazy_checks
from offline_agent.retrieval.columns import DECODE_ERRORS, StringColumn
from offline_agent.retrieval.encode import (
    BATCH,
    Encoded,
    Table,
    TermCoder,
    encode_texts,
    indexed_text,
    pin_malloc_threshold,
)
from offline_agent.retrieval.passages import Passage, SearchResult, split_heading
from offline_agent.retrieval.postings import Postings, Searcher, TermIds, Triples, build_postings, unique_sorted
from offline_agent.retrieval.scoring import BM25Params

ProgressFn = Callable[[int], None]


class BM25Index:
    """A BM25 index over passages: exact rank-bm25 scores, mmap loading, incremental updates.

    Build with `BM25Index.build(...)`, persist with `.save(dir)`, reopen with `BM25Index.load(dir)`.
    """

    def __init__(
        self,
        *,
        analyzer: Analyzer,
        params: BM25Params,
        postings: Postings,
        table: dict[str, Any],
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.params = params
        self._postings = postings
        # text, doc (int32), start/end (int64), dl (int32), live (uint8), heading, line/page (int32) per passage;
        # doc_key/title/source per document
        self._t = table
        self.extra: dict[str, Any] = extra if extra is not None else {}
        self._searcher = Searcher(postings, len(table["dl"]), params)
        self._term_ids = TermIds(postings)
        self._doc_rows: dict[str, list[int]] | None = None
        self._doc_order: np.ndarray | None = None
        self._pending: PendingChecks | None = None  # a large loaded index's checks, run on first use

    def _check(self, group: str) -> None:
        """Run the pending sha256 checks of `group` of arrays (checksums.PendingChecks) before they are first used."""
        if self._pending is not None:
            self._pending.check(group)
            if self._pending.done:
                self._pending = None

    # ---- building ----------------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        passages_or_docs: Iterable[str | Passage],
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        variant: str = "okapi",
        *,
        delta: float = 1.0,
        progress: ProgressFn | None = None,
        workers: int = 1,
        encoded: Encoded | None = None,
    ) -> BM25Index:
        """Index `passages_or_docs`: plain strings (each its own document) or `Passage`s (ids become 0..n-1).

        A passage's title, when it has one, is indexed with its text. `variant` is "okapi" (rank-bm25's
        BM25Okapi), "lucene" or "plus" (BM25+); `progress` is called with the number of passages just
        tokenized; `workers` > 1 tokenizes in that many processes (large builds only; see `encode`).
        `encoded` holds the passages' postings already made (`encode.PassageEncoder`), so none is tokenized here.
        """
        index = cls._empty(analyzer, variant=variant, k1=k1, b=b, epsilon=epsilon, delta=delta)
        index._apply(passages_or_docs, None, progress=progress, workers=workers, encoded=encoded)
        return index

    @classmethod
    def from_tokens(
        cls,
        corpus_tokens: Iterable[Sequence[str]],
        analyzer: Analyzer | None = None,
        **settings: float | str,
    ) -> BM25Index:
        """Index ready-made token lists (no analyzer, no stored text); query them with `search_tokens`.

        `analyzer` is kept for `search(str)` on this index; `settings` are the scoring settings `build` takes
        (k1, b, epsilon, variant, delta), by keyword, with the same defaults.
        """
        index = cls._empty(analyzer, **settings)
        coder = TermCoder(index.analyzer)
        parts, lengths, n = [], [], 0
        for batch in _batches(corpus_tokens, BATCH):
            part = coder.encode_tokens(batch)
            part.docs += n
            parts.append(part)
            lengths.append(coder.lengths)
            n += len(batch)
        table = Table()
        table.extend([""] * n, 0)
        index._merge(parts, coder.terms, np.concatenate(lengths) if lengths else np.zeros(0, np.int64), table, [])
        return index

    @classmethod
    def _empty(cls, analyzer: Analyzer | None, **settings: Any) -> BM25Index:
        """An index of no passage, with `analyzer` (None: a default Analyzer) and the scoring `settings`
        (BM25Params' fields; those not given keep its defaults, which are build's)."""
        analyzer = analyzer if analyzer is not None else Analyzer()
        params = BM25Params(**settings)
        empty_col = StringColumn.from_strings([])
        postings = Postings(
            empty_col,
            np.zeros(1, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.uint16),
            np.zeros(0, np.float32),
            np.zeros(0, np.float64),
            np.zeros(0, np.uint64),
            np.zeros(0, np.int32),
            np.zeros(1, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
            np.zeros(0, np.float32),
        )
        table = {
            "text": empty_col,
            "doc": np.zeros(0, np.int32),
            "start": np.zeros(0, np.int64),
            "end": np.zeros(0, np.int64),
            "dl": np.zeros(0, np.int32),
            "live": np.zeros(0, np.uint8),
            "doc_key": empty_col,
            "doc_title": empty_col,
            "doc_source": empty_col,
            "heading": empty_col,
            "line": np.zeros(0, np.int32),
            "page": np.zeros(0, np.int32),
        }
        return cls(analyzer=analyzer, params=params, postings=postings, table=table)

    # ---- updating ----------------------------------------------------------------------------------------
    def add(self, docs: Iterable[str | Passage], *, progress: ProgressFn | None = None, workers: int = 1) -> np.ndarray:
        """Add passages (as for `build`); return their new ids. Scores are recomputed as for a fresh build."""
        return self._apply(docs, None, progress=progress, workers=workers)

    def delete(self, ids: Iterable[int]) -> None:
        """Remove passages by id (unknown or already deleted ids are ignored); their text is dropped."""
        self._apply([], ids)

    def update(
        self,
        add: Iterable[str | Passage] = (),
        delete: Iterable[int] = (),
        *,
        progress: ProgressFn | None = None,
        workers: int = 1,
        encoded: Encoded | None = None,
    ) -> np.ndarray:
        """Delete then add in one pass (one weight recomputation); return the new ids. `encoded` is as for
        `build`."""
        return self._apply(add, delete, progress=progress, workers=workers, encoded=encoded)

    def _apply(
        self,
        docs: Iterable[str | Passage],
        delete: Iterable[int] | None,
        *,
        progress: ProgressFn | None = None,
        workers: int = 1,
        encoded: Encoded | None = None,
    ) -> np.ndarray:
        self._check("all")  # an update must not carry damaged arrays into the new generation
        base = len(self._t["dl"])
        table = Table()
        texts: list[str] = []  # what to tokenize: nothing where `encoded` holds the postings already
        for batch in _batches(docs, BATCH):
            table.extend(batch, base + len(table))
            if encoded is None:
                texts.extend(map(indexed_text, batch))
        dead = [] if delete is None else [int(i) for i in delete]
        if not len(table) and not dead:
            return np.zeros(0, np.int64)
        if len(table) + base > 50_000:
            pin_malloc_threshold()
        coder = TermCoder(self.analyzer, self._postings.vocab.tolist())
        if encoded is None:
            parts, new_dl = encode_texts(texts, coder, first_doc=base, workers=workers, progress=progress)
        else:
            parts, new_dl = self._encoded_parts(encoded, coder, len(table), base)
            if progress is not None and len(table):
                progress(len(table))
        del texts
        self._merge(parts, coder.terms, new_dl, table, dead)
        return np.arange(base, base + len(table), dtype=np.int64)

    def _encoded_parts(self, encoded: Encoded, coder: TermCoder, n: int, base: int) -> tuple[list[Triples], np.ndarray]:
        """`encoded`'s postings in this index's term ids, numbered from `base`, for `n` new passages."""
        if len(encoded.lengths) != n:
            raise ValueError(f"encoded postings are for {len(encoded.lengths)} passages, not the {n} given")
        if encoded.analyzer != self.analyzer.to_dict():
            raise ValueError("the passages were tokenized with another analyzer than this index's")
        ids = np.fromiter(map(coder.vocab.__getitem__, encoded.terms), np.int64, len(encoded.terms))
        parts = [Triples(ids[p.terms].astype(np.int32), (p.docs + base).astype(np.int32), p.tf) for p in encoded.parts]
        return parts, encoded.lengths

    def _merge(self, parts: list[Triples], terms: list[str], new_dl: np.ndarray, table: Table, dead: list[int]) -> None:
        t = self._t
        base = len(t["dl"])
        live = np.concatenate([np.asarray(t["live"], dtype=np.uint8), np.ones(len(new_dl), np.uint8)])
        dead_arr = np.asarray([d for d in dead if 0 <= d < base], dtype=np.int64)
        live[dead_arr] = 0
        dl = np.concatenate([np.asarray(t["dl"], dtype=np.int32), new_dl.astype(np.int32)])
        dl[dead_arr] = 0
        old = self._postings.triples()
        if len(dead_arr):
            keep = live[old.docs].astype(bool)
            old = Triples(old.terms[keep], old.docs[keep], old.tf[keep])
        all_parts: list[Triples | None] = [old, *parts]
        parts.clear()
        del old
        postings = build_postings(all_parts, terms, dl, live, self.params)

        # Passage table: old rows (dead ones emptied) then the new rows. Documents are numbered again: those
        # that lost every passage go, and a document is its id and source together (two files may hold records
        # with the same id).
        old_doc = np.asarray(t["doc"], dtype=np.int64).copy()
        old_doc[dead_arr] = -1
        kept = unique_sorted(old_doc[old_doc >= 0])
        remap = np.full(len(t["doc_key"]) + 1, -1, dtype=np.int64)
        remap[kept] = np.arange(len(kept))
        old_doc = remap[old_doc]  # -1 stays -1 through the extra last slot
        n_old_docs = len(kept)
        if table.one_doc_each:
            new_doc = np.arange(n_old_docs, n_old_docs + len(table), dtype=np.int64)
            first_rows = list(range(len(table)))
        else:
            new_doc, first_rows = self._group_new_docs(table, kept)
        doc = np.concatenate([old_doc, new_doc]).astype(np.int32)
        emptied = bool(base and (len(dead_arr) or not np.asarray(t["live"]).all()))

        def passage_column(name: str, new_values: list[str]) -> StringColumn:
            column = t[name]
            if emptied:  # a deleted passage's text and heading are dropped
                column = _emptied(column, live[:base].astype(bool))
            if not len(table):
                return column
            fresh = StringColumn.from_strings(new_values)
            return StringColumn.concat([column, fresh]) if base else fresh

        def passage_numbers(name: str, new_values: list[int], dtype: type) -> np.ndarray:
            numbers = np.concatenate([np.asarray(t[name]), np.asarray(new_values, dtype=dtype)]).astype(dtype)
            numbers[dead_arr] = 0
            return numbers

        def doc_column(name: str, new_values: list[str]) -> StringColumn:
            old = t[name] if len(kept) == len(t[name]) else t[name].take(kept)
            fresh = StringColumn.from_strings([new_values[r] for r in first_rows])
            return StringColumn.concat([old, fresh]) if len(old) else fresh

        self._t = {
            "text": passage_column("text", table.texts),
            "doc": doc,
            "start": passage_numbers("start", table.starts, np.int64),
            "end": passage_numbers("end", table.ends, np.int64),
            "dl": dl,
            "live": live,
            "doc_key": doc_column("doc_key", table.doc_keys),
            "doc_title": doc_column("doc_title", table.titles),
            "doc_source": doc_column("doc_source", table.sources),
            "heading": passage_column("heading", table.headings),
            "line": passage_numbers("line", table.lines, np.int32),
            "page": passage_numbers("page", table.pages, np.int32),
        }
        self._postings = postings
        self._searcher = Searcher(postings, len(dl), self.params)
        self._term_ids = TermIds(postings)
        self._doc_rows = None
        self._doc_order = None

    def _group_new_docs(self, table: Table, kept: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """Document numbers of the new rows (joining a kept document when id and source match)."""
        t = self._t
        numbers: dict[tuple[str, str], int] = {}
        if len(kept):
            keys, sources = t["doc_key"].take(kept).tolist(), t["doc_source"].take(kept).tolist()
            numbers = {(k, s): i for i, (k, s) in enumerate(zip(keys, sources, strict=True))}
        n_old = len(kept)
        first_rows: list[int] = []
        out = np.empty(len(table), dtype=np.int64)
        for row, key in enumerate(zip(table.doc_keys, table.sources, strict=True)):
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = n_old + len(first_rows)
                first_rows.append(row)
            out[row] = number
        return out, first_rows

    # ---- searching ---------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10) -> SearchResult:
        """The `k` best passages for `query`, by score descending then id ascending.

        A query with no indexed term (only stopwords or unknown words) returns an empty result.
        """
        return self.search_tokens(self.analyzer.tokens(query), k)

    def search_tokens(self, tokens: Sequence[str], k: int = 10) -> SearchResult:
        """Like `search`, for a query that is already a list of index terms."""
        ids, scores = self._top_k(tokens, k)
        return SearchResult(ids, scores, self._passages(ids, checked=True))

    def search_ids(self, query: str | Sequence[str], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Like `search` (a string, or a list of index terms), returning only (ids, scores): for evaluation
        loops that need no passage objects."""
        tokens = self.analyzer.tokens(query) if isinstance(query, str) else query
        return self._top_k(tokens, k)

    def search_many(self, queries: Iterable[str], k: int = 10) -> list[SearchResult]:
        """`search` for each query, in order."""
        return [self.search(q, k) for q in queries]

    def get_scores(self, query: str | Sequence[str]) -> np.ndarray:
        """Scores of every passage id for `query` (float32, 0 where no query term occurs), like rank-bm25."""
        tokens = self.analyzer.tokens(query) if isinstance(query, str) else query
        ids, scores = self._top_k(tokens, len(self._t["dl"]))
        out = np.zeros(len(self._t["dl"]), dtype=np.float32)
        out[ids] = scores
        return out

    def term_idf(self, terms: Iterable[str]) -> dict[str, float]:
        """The idf of each index term (as the scoring variant computes it); 0.0 for a term not in the index."""
        self._check("postings")
        idf = self._postings.idf
        terms = list(terms)
        out = {}
        for term, tid in zip(terms, self._term_ids.many(terms), strict=True):
            out[term] = float(idf[tid]) if tid >= 0 else 0.0
        return out

    def _top_k(self, tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        self._check("postings")
        counts: dict[int, int] = {}
        for tid in self._term_ids.many(tokens):
            if tid >= 0:
                counts[tid] = counts.get(tid, 0) + 1
        terms = sorted(counts)
        return self._searcher.top_k(terms, [counts[t] for t in terms], int(k))

    # ---- passages ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(np.count_nonzero(self._t["live"]))

    @property
    def n_rows(self) -> int:
        """One more than the largest passage id ever assigned."""
        return len(self._t["dl"])

    def ids(self) -> np.ndarray:
        """The ids of the live passages, ascending."""
        return np.flatnonzero(self._t["live"]).astype(np.int64)

    def passage(self, id: int) -> Passage:
        """The passage with this id; KeyError if there is none (never assigned, or deleted)."""
        passages = self._passages(np.asarray([id], dtype=np.int64))
        return passages[0]

    def _passages(self, ids: np.ndarray, *, checked: bool = False) -> list[Passage]:
        """Passages for `ids`; `checked` skips the liveness check (ids that came out of a search)."""
        self._check("passages")
        t = self._t
        if len(ids) == 0:
            return []
        if not checked:
            n = len(t["dl"])
            if ids.min() < 0 or ids.max() >= n or not np.asarray(t["live"])[ids].all():
                bad = next(int(i) for i in ids if not (0 <= i < n and t["live"][i]))
                raise KeyError(f"no passage with id {bad}")
        docs = np.asarray(t["doc"])[ids].tolist()
        starts = np.asarray(t["start"])[ids].tolist()
        ends = np.asarray(t["end"])[ids].tolist()
        lines = np.asarray(t["line"])[ids].tolist()
        pages = np.asarray(t["page"])[ids].tolist()
        heading = t["heading"]
        headings = [split_heading(heading[i]) for i in ids.tolist()]
        # Inlined StringColumn lookups: this runs for every hit of every search.
        text, key, title, source = t["text"], t["doc_key"], t["doc_title"], t["doc_source"]
        tb, to = text._blob_view, text._offsets_view
        kb, ko = key._blob_view, key._offsets_view
        hb, ho = title._blob_view, title._offsets_view
        sb, so = source._blob_view, source._offsets_view
        return [
            Passage(
                i,
                str(kb[ko[d] : ko[d + 1]], "utf-8", DECODE_ERRORS),
                str(hb[ho[d] : ho[d + 1]], "utf-8", DECODE_ERRORS),
                str(tb[to[i] : to[i + 1]], "utf-8", DECODE_ERRORS),
                str(sb[so[d] : so[d + 1]], "utf-8", DECODE_ERRORS),
                s,
                e,
                h,
                line,
                page,
            )
            for i, d, s, e, h, line, page in zip(ids.tolist(), docs, starts, ends, headings, lines, pages, strict=True)
        ]

    def passages_of(self, doc_id: str) -> list[Passage]:
        """The live passages of document `doc_id` in document order (by start offset); [] if unknown."""
        self._check("passages")
        if self._doc_rows is None:
            rows: dict[str, list[int]] = {}
            for number, key in enumerate(self._t["doc_key"].tolist()):
                rows.setdefault(key, []).append(number)
            self._doc_rows = rows
            self._doc_order = np.argsort(np.asarray(self._t["doc"]), kind="stable")
        numbers = self._doc_rows.get(doc_id)
        if not numbers:
            return []
        doc_sorted = np.asarray(self._t["doc"])[self._doc_order]
        parts = [self._doc_order[slice(*np.searchsorted(doc_sorted, [n, n + 1]))] for n in numbers]
        passages = self._passages(np.concatenate(parts).astype(np.int64))
        return sorted(passages, key=lambda p: (p.source, p.start, p.id))

    def ids_of_sources(self, sources: set[str]) -> list[int]:
        """Ids of the live passages whose source is in `sources` (what an update of those files replaces)."""
        if not sources:
            return []
        self._check("passages")
        wanted = np.array([s in sources for s in self._t["doc_source"].tolist()], dtype=bool)
        doc = np.asarray(self._t["doc"])
        if not wanted.any():
            return []
        return np.flatnonzero((doc >= 0) & wanted[np.maximum(doc, 0)]).tolist()

    def doc_ids(self) -> list[str]:
        """The ids of the documents that have live passages."""
        self._check("passages")
        return self._t["doc_key"].tolist()

    def info(self) -> dict[str, Any]:
        """Counts and settings, JSON-ready."""
        return {
            "passages": len(self),
            "documents": len(self._t["doc_key"]),
            "terms": self._postings.n_terms,
            "postings": len(self._postings.docs),
            "bm25": self.params.to_dict(),
            "analyzer": self.analyzer.to_dict(),
        }

    # ---- persistence -------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the index to folder `path` atomically (a new generation if one is there); return the path."""
        self._check("all")
        t, p = self._t, self._postings
        arrays = {
            "vocab_blob": p.vocab.blob,
            "vocab_offsets": p.vocab.offsets,
            "post_offsets": p.offsets,
            "post_docs": p.docs,
            "post_tf": p.tf,
            "post_weights": p.weights,
            "idf": p.idf,
            "vocab_hash": p.hash_keys,
            "vocab_hash_ids": p.hash_ids,
            "impact_offsets": p.impact_offsets,
            "impact_docs": p.impact_docs,
            "impact_weights": p.impact_weights,
            "term_tail": p.term_tail,
            "dl": t["dl"],
            "live": t["live"],
            "text_blob": t["text"].blob,
            "text_offsets": t["text"].offsets,
            "p_doc": t["doc"],
            "p_start": t["start"],
            "p_end": t["end"],
            "p_line": t["line"],
            "p_page": t["page"],
        }
        for name in ("doc_key", "doc_title", "doc_source", "heading"):
            arrays[f"{name}_blob"] = t[name].blob
            arrays[f"{name}_offsets"] = t[name].offsets
        meta = {
            "analyzer": self.analyzer.to_dict(),
            "bm25": self.params.to_dict(),
            "passages": len(self),
            "rows": len(t["dl"]),
            "documents": len(t["doc_key"]),
            "terms": p.n_terms,
            "postings": len(p.docs),
        }
        storage.write_index(Path(path), arrays, meta, self.extra)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, mmap: bool = True, *, verify: bool | None = None) -> BM25Index:
        """Open a saved index; arrays are memory-mapped unless `mmap=False`.

        Structural checks always run (retrieval/checks.py); `verify` True checks every file's sha256, False
        none, None (the default) all for indexes up to storage.VERIFY_ON_LOAD_MAX_BYTES, and for a larger one each
        group of arrays the first time it is used (checksums.PendingChecks).
        """
        path = Path(path)
        arrays, meta, extra, manifest = storage.read_index(path, mmap=mmap, verify=verify)
        check_index_arrays(path / manifest["generation"], arrays, meta)
        try:
            analyzer = Analyzer.from_dict(meta["analyzer"])
            params = BM25Params(**meta["bm25"])
            a = arrays

            def col(name: str) -> StringColumn:
                return StringColumn(a[f"{name}_blob"], a[f"{name}_offsets"])

            postings = Postings(
                col("vocab"),
                a["post_offsets"],
                a["post_docs"],
                a["post_tf"],
                a["post_weights"],
                a["idf"],
                a["vocab_hash"],
                a["vocab_hash_ids"],
                a["impact_offsets"],
                a["impact_docs"],
                a["impact_weights"],
                a["term_tail"],
            )
            table = {
                "text": col("text"),
                "doc": a["p_doc"],
                "start": a["p_start"],
                "end": a["p_end"],
                "dl": a["dl"],
                "live": a["live"],
                "doc_key": col("doc_key"),
                "doc_title": col("doc_title"),
                "doc_source": col("doc_source"),
                # Kept since positions were added; an index written before has none: read as empty and 0.
                "heading": col("heading") if "heading_blob" in a else _empty_strings(len(a["dl"])),
                "line": a.get("p_line", np.zeros(len(a["dl"]), np.int32)),
                "page": a.get("p_page", np.zeros(len(a["dl"]), np.int32)),
            }
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = path / manifest["generation"] / "meta.json"
            raise RetrievalError(f"corrupt index file {where}: missing or bad entry {exc}") from None
        index = cls(analyzer=analyzer, params=params, postings=postings, table=table, extra=extra)
        index._pending = lazy_checks(path, manifest, verify)
        return index


def _empty_strings(n: int) -> StringColumn:
    """A column of `n` empty strings."""
    return StringColumn(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))


def _emptied(column: StringColumn, keep: np.ndarray) -> StringColumn:
    """`column` with the rows where `keep` is False emptied: the bytes of each run of rows that stay are copied
    in one piece (an update deletes a few rows; indexing every byte of the column cost a large index most of the
    update's time)."""
    if keep.all():
        return column
    offsets = np.asarray(column.offsets)
    lengths = np.where(keep, np.diff(offsets), 0)
    new_offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    changes = np.flatnonzero(np.diff(np.concatenate([[False], keep, [False]]).astype(np.int8)))
    blob = np.asarray(column.blob)
    pieces = [blob[offsets[first] : offsets[end]] for first, end in zip(changes[0::2], changes[1::2], strict=True)]
    return StringColumn(np.concatenate(pieces) if pieces else np.zeros(0, np.uint8), new_offsets)


def _batches(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch
