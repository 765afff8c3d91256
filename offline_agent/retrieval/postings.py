"""The inverted file: term-major postings with precomputed weights, how to build them and how to search them.

Layout (all flat numpy arrays, so they can be saved as .npy and mapped back with mmap):
`offsets[t]:offsets[t+1]` is the block of term `t` (terms numbered in sorted UTF-8 order, `vocab` holds the
strings); in that block `docs` (int32, ascending) are the passage ids holding the term, `tf` their term counts
and `weights` (float32) what each contributes to a score. Term frequencies are kept so that an update can
recompute every weight (N and the average length change) without tokenizing any text again.

Search touches only the blocks of the query's terms: each term's weights are added into a scratch array
(float64, in ascending term order, so every code path sums in the same order), the touched ids are the hits,
and the top k are chosen by float32 score descending, then id ascending. No JIT, so the first query of a
process costs the same as the others.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from offline_agent.retrieval.columns import StringColumn
from offline_agent.retrieval.kernel import KERNEL
from offline_agent.retrieval.scoring import BM25Params

_WEIGHT_CHUNK = 1 << 20
_PRUNE_FROM = 20_000  # postings; below this, scoring everything is as fast as pruning
IMPACT_TOP = 4096  # best passages kept apart for each frequent term
_KERNEL_MAX_K = 10_000  # beyond, a heap of k hits costs more than numpy's sort (get_scores asks for every row)


@dataclass
class Triples:
    """Unsorted postings as parallel arrays: term id (int32), passage id (int32), term frequency (uint16, or
    int32 for counts beyond 65,535)."""

    terms: np.ndarray
    docs: np.ndarray
    tf: np.ndarray

    @staticmethod
    def compact(terms: np.ndarray, docs: np.ndarray, tf: np.ndarray) -> Triples:
        """Triples in the small dtypes."""
        small_tf = len(tf) == 0 or int(tf.max()) < 1 << 16
        return Triples(terms.astype(np.int32), docs.astype(np.int32), tf.astype(np.uint16 if small_tf else np.int32))

    @staticmethod
    def concat(parts: Sequence[Triples]) -> Triples:
        if not parts:
            empty = np.zeros(0, np.int32)
            return Triples(empty, empty, empty)
        return Triples(
            np.concatenate([p.terms for p in parts]),
            np.concatenate([p.docs for p in parts]),
            np.concatenate([p.tf for p in parts]),
        )


def term_hash(term: str) -> int:
    """A stable 64-bit hash of a term (the same in every process and on every platform)."""
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@dataclass
class Postings:
    """Term-major postings, the statistics their weights came from, and a hash table of the vocabulary.

    `hash_keys` holds the terms' 64-bit hashes in ascending order and `hash_ids` the term id of each, so a
    lookup is one binary search in numpy instead of a dictionary built at load time.

    Terms in more than IMPACT_TOP passages also keep their IMPACT_TOP best-weighted passages
    (`impact_docs[impact_offsets[t]:impact_offsets[t+1]]`, ascending, with `impact_weights`) and
    `term_tail[t]`, the largest weight
    of the others: what lets a search score only those passages and prove that the rest cannot reach the
    top k (see `Searcher._pruned`).
    """

    vocab: StringColumn
    offsets: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    weights: np.ndarray
    idf: np.ndarray
    hash_keys: np.ndarray
    hash_ids: np.ndarray
    impact_offsets: np.ndarray
    impact_docs: np.ndarray
    impact_weights: np.ndarray
    term_tail: np.ndarray

    def find(self, term: str) -> int:
        """The id of `term`, or -1."""
        h = term_hash(term)
        keys = self.hash_keys
        i = int(np.searchsorted(keys, np.uint64(h)))
        while i < len(keys) and int(keys[i]) == h:
            tid = int(self.hash_ids[i])
            if self.vocab[tid] == term:
                return tid
            i += 1
        return -1

    def find_many(self, terms: Sequence[str]) -> list[int]:
        """The id of each of `terms` (-1 where it is not in the vocabulary), as `find` gives it: one binary search
        in numpy for all of them (a query's terms cost a third of looking them up one by one)."""
        if not terms:
            return []
        hashes = np.fromiter((term_hash(term) for term in terms), np.uint64, len(terms))
        keys = self.hash_keys
        at = np.searchsorted(keys, hashes)
        hits = at < len(keys)
        hits[hits] = keys[at[hits]] == hashes[hits]
        candidates = np.where(hits, self.hash_ids[np.minimum(at, len(keys) - 1)] if len(keys) else -1, -1)
        out = []
        for term, tid, hit in zip(terms, candidates.tolist(), hits.tolist(), strict=True):
            # Two terms may share a hash: the first candidate is checked, and a mismatch searches on.
            out.append(tid if hit and self.vocab[tid] == term else self.find(term) if hit else -1)
        return out

    @property
    def n_terms(self) -> int:
        return len(self.offsets) - 1

    def triples(self) -> Triples:
        """The postings as (term, doc, tf) triples, terms numbered as in `vocab` (docs and tf not copied)."""
        counts = np.diff(np.asarray(self.offsets))
        terms = np.repeat(np.arange(self.n_terms, dtype=np.int32), counts)
        return Triples(terms, np.asarray(self.docs), np.asarray(self.tf))


class TermIds:
    """Term ids for query terms: one dictionary of the whole vocabulary when it is small, else hash lookups.

    A dictionary answers a term in tens of nanoseconds where `Postings.find_many` costs microseconds (a hash,
    a binary search, a string compare per term), which was most of a query's time on a small index (HotpotQA's
    5,716 paragraphs: 0.15 ms a question, 0.06 ms with the dictionary). It is built on the first lookup, not at
    load, from the vocabulary column: 20 ms for that pool's 39k terms on 2 cores, so load stays fast for a
    command that never searches. Above FULL_VOCAB terms (real corpora of a million passages have millions) the
    first query would pay too much, so the hash table answers, with a bounded cache of the terms already asked.
    """

    FULL_VOCAB = 200_000
    CACHE = 100_000

    def __init__(self, postings: Postings) -> None:
        self._postings = postings
        self._all: dict[str, int] | None = None
        self._cache: dict[str, int] = {}

    def many(self, terms: Sequence[str]) -> list[int]:
        """The id of each of `terms`, -1 where it is not in the vocabulary."""
        every = self._all
        if every is None and self._postings.n_terms <= self.FULL_VOCAB:
            every = self._all = dict(zip(self._postings.vocab.tolist(), range(self._postings.n_terms), strict=True))
        if every is not None:
            return [every.get(term, -1) for term in terms]
        cache = self._cache
        unseen = list(dict.fromkeys(term for term in terms if term not in cache))
        found = dict(zip(unseen, self._postings.find_many(unseen), strict=True)) if unseen else {}
        if found and len(cache) < self.CACHE:
            cache.update(found)
        return [found[term] if term in found else cache[term] for term in terms]


def build_postings(
    parts: list[Triples | None], terms: Sequence[str], dl: np.ndarray, live: np.ndarray, params: BM25Params
) -> Postings:
    """Sort the triples in `parts` term-major (terms renumbered in sorted order, unused terms dropped) and
    weigh them. `parts` is emptied as it is used, so its memory goes back while the sorted arrays grow.

    `terms[i]` is the string of term id i in the triples; `dl` and `live` are per passage id.
    """
    n_live = int(np.count_nonzero(live))
    total_len = int(dl[live.astype(bool)].sum()) if len(dl) else 0
    avgdl = total_len / n_live if n_live else 1.0
    df_all = np.zeros(len(terms), dtype=np.int64)
    for part in parts:
        if part is not None and len(part.terms):
            df_all += np.bincount(part.terms, minlength=len(terms))
    order = np.asarray(sorted(np.flatnonzero(df_all).tolist(), key=terms.__getitem__), dtype=np.int64)
    rank = np.full(len(terms), -1, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    vocab = StringColumn.from_strings([terms[i] for i in order.tolist()])
    df = df_all[order]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])

    docs, tf = _sort_term_major(parts, rank, len(order), len(dl))
    idf = params.idf(df, n_live)
    weights = np.empty(len(docs), dtype=np.float32)
    dl64 = np.asarray(dl, dtype=np.float64)
    for lo in range(0, len(docs), _WEIGHT_CHUNK):
        hi = min(lo + _WEIGHT_CHUNK, len(docs))
        first, last = np.searchsorted(offsets, [lo, hi - 1], side="right") - 1  # the terms this chunk spans
        term_of = np.repeat(np.arange(first, last + 1), np.diff(np.clip(offsets[first : last + 2], lo, hi)))
        weights[lo:hi] = params.weights(idf[term_of], tf[lo:hi], dl64[docs[lo:hi]], avgdl)
    hashes = np.fromiter(map(term_hash, (terms[i] for i in order.tolist())), dtype=np.uint64, count=len(order))
    hash_ids = np.argsort(hashes, kind="stable").astype(np.int32)
    impact = _impacts(offsets, docs, weights)
    return Postings(vocab, offsets, docs, tf, weights, idf, hashes[hash_ids], hash_ids, *impact)


def _impacts(offsets: np.ndarray, docs: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """(impact_offsets, impact_docs, impact_weights, term_tail) for terms in over IMPACT_TOP passages."""
    n_terms = len(offsets) - 1
    big = np.flatnonzero(np.diff(offsets) > IMPACT_TOP)
    sizes = np.zeros(n_terms, dtype=np.int64)
    sizes[big] = IMPACT_TOP
    impact_offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(sizes, out=impact_offsets[1:])
    impact_docs = np.empty(len(big) * IMPACT_TOP, dtype=np.int32)
    impact_weights = np.empty(len(big) * IMPACT_TOP, dtype=np.float32)
    term_tail = np.zeros(n_terms, dtype=np.float32)
    for j, t in enumerate(big.tolist()):
        lo, hi = int(offsets[t]), int(offsets[t + 1])
        w = weights[lo:hi]
        top = np.sort(np.argpartition(w, len(w) - IMPACT_TOP)[len(w) - IMPACT_TOP :])  # in doc order
        impact_docs[j * IMPACT_TOP : (j + 1) * IMPACT_TOP] = docs[lo:hi][top]
        impact_weights[j * IMPACT_TOP : (j + 1) * IMPACT_TOP] = w[top]
        term_tail[t] = w[top].min()  # every passage left out weighs at most this
    return impact_offsets, impact_docs, impact_weights, term_tail


def _sort_term_major(
    parts: list[Triples | None], rank: np.ndarray, n_terms: int, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """(docs, tf) ordered by (term rank, doc): one in-place sort of packed int64 keys when they fit."""
    live_parts = [p for p in parts if p is not None]
    total = sum(len(p.terms) for p in live_parts)
    max_tf = max((int(p.tf.max()) for p in live_parts if len(p.tf)), default=0)
    tf_dtype = np.uint16 if max_tf < 1 << 16 else np.int32
    tf_bits = max(1, max_tf.bit_length())
    doc_bits = max(1, n_docs.bit_length())
    term_bits = max(1, n_terms.bit_length())
    del live_parts
    if tf_bits + doc_bits + term_bits > 63:  # pragma: no cover - needs billions of terms and passages
        merged = Triples.concat([p for p in parts if p is not None])
        parts.clear()
        order = np.lexsort((merged.docs, rank[merged.terms]))
        return merged.docs[order].astype(np.int32), merged.tf[order].astype(tf_dtype)
    key = np.empty(total, dtype=np.int64)
    pos = 0
    for i, part in enumerate(parts):
        if part is None:
            continue
        n = len(part.terms)
        chunk = rank[part.terms] << (doc_bits + tf_bits)
        chunk |= part.docs.astype(np.int64) << tf_bits
        chunk |= part.tf
        key[pos : pos + n] = chunk
        pos += n
        parts[i] = None  # give the part's memory back before the next one is packed
    key.sort()
    out_tf = np.empty(total, dtype=tf_dtype)
    out_docs = np.empty(total, dtype=np.int32)
    for lo in range(0, total, _WEIGHT_CHUNK):  # in chunks: no second full-size int64 array
        chunk = key[lo : lo + _WEIGHT_CHUNK]
        out_tf[lo : lo + len(chunk)] = chunk & ((1 << tf_bits) - 1)
        out_docs[lo : lo + len(chunk)] = (chunk >> tf_bits) & ((1 << doc_bits) - 1)
    return out_docs, out_tf


class Searcher:
    """Top-k retrieval over `Postings`; keeps one scratch array per thread."""

    def __init__(self, postings: Postings, n_rows: int, params: BM25Params) -> None:
        self.postings = postings
        self.n_rows = n_rows
        self.params = params
        offsets = np.ascontiguousarray(postings.offsets, dtype=np.int64)
        self._offsets = memoryview(offsets).cast("B").cast("q")
        self._local = threading.local()
        # The kernel reads the arrays through the buffer protocol: it needs them contiguous in these dtypes.
        self._kernel = None
        if KERNEL is not None:
            big = (postings.docs, np.int32), (postings.weights, np.float32)
            if all(a.dtype == t and a.flags.c_contiguous for a, t in big):
                self._kernel = KERNEL
                self._kernel_args = (
                    postings.docs,
                    postings.weights,
                    offsets,
                    np.ascontiguousarray(postings.impact_offsets, dtype=np.int64),
                    np.ascontiguousarray(postings.impact_docs, dtype=np.int32),
                    np.ascontiguousarray(postings.impact_weights, dtype=np.float32),
                    np.ascontiguousarray(postings.term_tail, dtype=np.float32),
                )
        # Pruning needs weights >= 0: true of every term whose idf is (BM25+ also needs delta >= 0).
        self._idf = memoryview(np.ascontiguousarray(postings.idf, dtype=np.float64)).cast("B").cast("d")
        self._signed = params.variant == "plus" and params.delta < 0
        self._how = 0  # the kernel chooses how to search (tests force each way)

    def _scratch(self) -> np.ndarray:
        """This thread's float64 array, one zero per row (every path leaves it zeroed)."""
        return self._thread_zeros("acc", np.float64)

    def _marks(self) -> np.ndarray:
        """This thread's uint8 array, one zero per row (the kernel's record of touched rows)."""
        return self._thread_zeros("mark", np.uint8)

    def _thread_zeros(self, name: str, dtype: type) -> np.ndarray:
        """This thread's array `name`, one zero per row, made on first use or when the rows changed."""
        found = getattr(self._local, name, None)
        if found is None or len(found) != self.n_rows:
            found = np.zeros(self.n_rows, dtype=dtype)
            setattr(self._local, name, found)
        return found

    def top_k(self, terms: list[int], mults: list[int], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids (int64) and float32 scores of the best `k` hits for unique ascending term ids `terms`.

        A term asked `c` times (`mults`) counts `c` times, as in rank-bm25 (which loops over the query's tokens).
        The compiled kernel answers when it is there (same hits, scores and order; see kernel.py), numpy
        otherwise and for very large k or long queries.
        """
        if k <= 0 or not terms:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        const = 0.0
        if self.params.variant == "plus":
            const = self.params.query_constant(np.asarray(self.postings.idf)[terms], np.asarray(mults))
        kernel = self._kernel
        if kernel is not None and k <= _KERNEL_MAX_K and len(terms) <= kernel.MAX_TERMS:
            ids = np.empty(k, np.int64)
            scores = np.empty(k, np.float32)
            idf = self._idf
            nonneg = not self._signed and all(idf[t] >= 0 for t in terms)
            n = kernel.top_k(
                *self._kernel_args,
                terms,
                mults,
                k,
                const,
                nonneg,
                self._how,
                self._scratch(),
                self._marks(),
                ids,
                scores,
            )
            return ids[:n], scores[:n]
        return self._numpy_top_k(np.asarray(terms, np.int64), np.asarray(mults, np.int64), k, const)

    def _numpy_top_k(
        self, term_ids: np.ndarray, counts: np.ndarray, k: int, const: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """`top_k` in numpy: every posting of the query's terms is scored (or `_pruned` proves a shortcut)."""
        p, offsets = self.postings, self._offsets
        repeated = bool(counts.max() > 1)
        spans = [(offsets[t], offsets[t + 1]) for t in term_ids.tolist()]
        if len(spans) > 1 and k <= 1000 and sum(hi - lo for lo, hi in spans) > _PRUNE_FROM:
            pruned = self._pruned(term_ids, counts, spans, k, const)
            if pruned is not None:
                return pruned
        if len(spans) == 1:
            lo, hi = spans[0]
            ids = p.docs[lo:hi]
            scores = p.weights[lo:hi].astype(np.float64)
        else:
            ids = np.concatenate([p.docs[lo:hi] for lo, hi in spans])
            scores = np.concatenate([p.weights[lo:hi] for lo, hi in spans]).astype(np.float64)
        if repeated:
            scores *= np.repeat(counts, [hi - lo for lo, hi in spans])
        if len(spans) > 1:
            # Sum per passage in term order (add.at and bincount add sequentially, so every path adds the same
            # numbers in the same order). Each passage then appears once per query term it holds.
            if len(ids) > self.n_rows // 4:
                sums = np.bincount(ids, scores, minlength=self.n_rows)
                if not const:
                    best = _dense_top(sums.astype(np.float32), k)
                    if best is not None:
                        return best
                scores = sums[ids]
            else:
                acc = self._scratch()
                try:
                    np.add.at(acc, ids, scores)
                    scores = acc[ids]
                    acc[ids] = 0.0
                except BaseException:
                    self._local.acc = None  # an interrupted query may leave the scratch dirty
                    raise
        if const:
            scores += const
        return _select(ids, scores.astype(np.float32), k, copies=len(spans))

    def _pruned(
        self, term_ids: np.ndarray, counts: np.ndarray, spans: list[tuple[int, int]], k: int, const: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact top k without scoring every passage of the query's frequent terms, or None when that
        cannot be proven and the caller must score everything (a threshold-algorithm test).

        Candidates are every passage of the rare terms and the best-weighted passages of the frequent ones.
        From those short lists alone each candidate gets a lower bound (the weights it is known to have) and an
        upper bound (each unknown weight is at most the term's tail); only candidates whose upper bound reaches
        the k-th lower bound are then looked up in the long blocks and scored exactly, in term order (the same
        sums as the full path). Any other passage holds no rare term and gets at most `term_tail` from each
        frequent term, so when those tails add up to less than the k-th exact score, the answer is exact.
        """
        p = self.postings
        mult = counts.tolist()
        short = []  # per term: (docs, weights) of the list the candidates come from, and its tail (None: all)
        bound = 0.0
        for i, t in enumerate(term_ids.tolist()):
            ilo, ihi = int(p.impact_offsets[t]), int(p.impact_offsets[t + 1])
            if ihi > ilo:
                tail = float(p.term_tail[t]) * mult[i]
                short.append((p.impact_docs[ilo:ihi], p.impact_weights[ilo:ihi], tail))
                bound += max(0.0, tail)
            else:
                lo, hi = spans[i]
                short.append((p.docs[lo:hi], p.weights[lo:hi], None))
        if all(tail is None for _, _, tail in short):
            return None
        cand = unique_sorted(np.concatenate([docs for docs, _, _ in short]))
        if len(cand) < k:
            return None
        low = np.zeros(len(cand), dtype=np.float64)
        known_tail = np.zeros(len(cand), dtype=np.float64)  # tails of the lists a candidate is in
        for i, (docs, weights, tail) in enumerate(short):
            pos = np.searchsorted(cand, docs)  # every listed passage is a candidate
            w = weights.astype(np.float64)
            if mult[i] != 1:
                w *= mult[i]
            low[pos] += w
            if tail is not None:
                known_tail[pos] += max(0.0, tail)
        high = low + (bound - known_tail)
        margin = 1e-6 * (abs(const) + float(high.max()) + bound) + 1e-30
        if all(tail is None or tail >= 0 for _, _, tail in short):  # lower bounds need weights >= 0
            floor = float(np.partition(low, len(low) - k)[len(low) - k])
            cand = cand[high + margin >= floor]
        scores = np.zeros(len(cand), dtype=np.float64)
        for i, (lo, hi) in enumerate(spans):  # ascending term id: the order of the full path's sums
            block = p.docs[lo:hi]
            pos = np.minimum(np.searchsorted(block, cand), len(block) - 1)
            found = np.flatnonzero(block[pos] == cand)
            w = p.weights[lo:hi][pos[found]].astype(np.float64)
            if mult[i] != 1:
                w *= mult[i]
            scores[found] += w
        if const:
            scores += const
        scores32 = scores.astype(np.float32)
        kth = float(np.partition(scores32, len(scores32) - k)[len(scores32) - k])
        # A passage outside the candidates scores at most const + bound; a margin covers float rounding.
        if const + bound + margin >= kth:
            return None
        return _select(cand, scores32, k)


def run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values in a sorted array."""
    mask = np.empty(len(sorted_values), dtype=bool)
    if len(mask):
        mask[0] = True
        np.not_equal(sorted_values[1:], sorted_values[:-1], out=mask[1:])
    return mask


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique(values) by sorting (numpy 2's hash-based np.unique is far slower on these arrays)."""
    values = np.sort(values)
    return values[run_starts(values)]


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_counts=True), by sorting."""
    return runs(np.sort(values))


def runs(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a sorted array and how many times each occurs."""
    starts = np.flatnonzero(run_starts(sorted_values))
    return sorted_values[starts], np.diff(starts, append=len(sorted_values))


def _dense_top(sums: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The best `k` passages of a full score array (float32, one per passage), by score descending then id
    ascending, or None when passages without a hit (score 0) could be among them.

    For queries whose postings cover a large share of the corpus: one partition over the passages costs less
    than gathering the sums back onto every posting and selecting among those.
    """
    if k >= len(sums):
        return None
    kth = np.partition(sums, len(sums) - k)[len(sums) - k]
    if not kth > 0:
        return None
    best = np.flatnonzero(sums >= kth)  # ascending ids, ties at the boundary included
    order = np.argsort(-sums[best], kind="stable")[:k]
    return best[order].astype(np.int64), sums[best[order]]


def _select(ids: np.ndarray, scores: np.ndarray, k: int, copies: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The best `k` of (ids, scores) by score descending then id ascending; an id may appear `copies` times.

    With one copy the ids come in ascending order (a posting block). The k * copies best entries hold at least
    k distinct ids, so keeping every entry that scores at least as much as the (k * copies)-th best keeps the
    true top k and every tie with it.
    """
    want = k * copies
    if len(ids) > want:
        part = np.argpartition(scores, len(scores) - want)[len(scores) - want :]
        sel = np.flatnonzero(scores >= scores[part].min())  # ties at the boundary too: the id rule decides
        ids, scores = ids[sel], scores[sel]
    if copies > 1:
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        first = run_starts(ids)
        ids, scores = ids[first], scores[order][first]
    # ids are ascending here, so a stable sort on the score alone puts ties in id order.
    order = np.argsort(-scores, kind="stable")[:k]
    return ids[order].astype(np.int64), scores[order]
