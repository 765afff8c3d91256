"""Text to postings: the tokenizing half of a build, in this process or spread over worker processes.

Tokenizing is most of the cost of building an index (the rest is one sort and one pass of arithmetic), so it runs on
batches of documents joined into one string and can run in worker processes (`encode_texts(..., workers=N)`). An
ASCII batch never becomes Python strings token by token: its bytes go to numpy, tokens are the runs of letters and
digits, and each token is keyed by its characters (a token of up to 8 is its own key, in 6-bit codes; a longer one
gets a hash of its 8-byte words, checked word by word against one copy of each distinct key, so a collision cannot
merge two tokens: the batch then takes the general path). Only one token per distinct key goes through the analyzer.
Documents that are not ASCII (once the punctuation beyond ASCII, which no token holds, is a space) split with the
regular expression and look each token up in a dictionary. Workers number terms in their own vocabularies and send
back only the terms they have not sent before, so the parent merges a batch with one array lookup. Workers are
started with "spawn" (safe beside threads, and the same on every platform), which needs the usual `if __name__ ==
"__main__":` guard in a script that builds an index with workers. `PassageEncoder` tokenizes the passages of files
while other files are still being read (catalog.py), and keeps the postings of those that are indexed in the end.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offline_agent.retrieval.analyzer import TOKEN_PATTERN, Analyzer
from offline_agent.retrieval.passages import Passage, join_heading
from offline_agent.retrieval.postings import Triples, run_starts, runs, unique_counts, unique_sorted
from offline_agent.retrieval.workers import ordered_map

BATCH = 4096
_SEP = " \x00 "  # between documents in a batch: its NUL comes out as a token of its own
_BATCH_RE = re.compile(f"{TOKEN_PATTERN}|\x00")
# A character beyond ASCII that no token holds (a curly quote, a dash, an arrow, a zero-width space): it only
# separates tokens, as a space does, so it is written as one, and a text of ASCII words takes the fast path.
_OTHER_SEPARATORS = re.compile(r"[^\w\x00-\x7f]+")
# _LOW_BYTES[n] keeps the first n bytes of a little-endian 8-byte word.
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_MIX = np.uint64(0x9E3779B97F4A7C15)
# The 6-bit code of each ASCII letter or digit (see TermCoder._encode_ascii), and the shifts that squeeze eight
# of them, one per byte, into 48 bits.
_CODE_CHARS = "\0" + "0123456789" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "abcdefghijklmnopqrstuvwxyz"
_SHORT_BITS = 48
_PACK_STEPS = [
    (np.uint64(0x00FF00FF00FF00FF), np.uint64(2)),
    (np.uint64(0x0000FFFF0000FFFF), np.uint64(4)),
    (np.uint64(0x00000000FFFFFFFF), np.uint64(8)),
]
_DROPPED, _BOUNDARY = -1, -2


class Vocab(dict):
    """term -> id; an unknown term gets the next id, so a C-level `map(vocab.__getitem__, ...)` grows it."""

    def __init__(self, terms: Sequence[str] = ()) -> None:
        super().__init__((t, i) for i, t in enumerate(terms))
        self.terms: list[str] = list(terms)

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self.terms)
        self.terms.append(term)
        return tid


class RawIds(dict):
    """raw token -> term id, -1 for a token the analyzer drops, -2 for the document separator."""

    def __init__(self, analyzer: Analyzer, vocab: Vocab) -> None:
        super().__init__({"\x00": _BOUNDARY})
        self.analyzer = analyzer
        self.vocab = vocab

    def __missing__(self, token: str) -> int:
        term = self.analyzer.term_uncached(token)
        tid = self[token] = _DROPPED if term is None else self.vocab[term]
        return tid


class ShortKeys(dict):
    """48-bit key of an ASCII token of at most 8 characters (six bits a character) -> what `RawIds` says for it."""

    def __init__(self, raw: RawIds) -> None:
        super().__init__()
        self.raw = raw

    def __missing__(self, key: int) -> int:
        chars, rest = [], key
        while rest:
            chars.append(_CODE_CHARS[rest & 63])
            rest >>= 6
        tid = self[key] = self.raw["".join(chars)]
        return tid


class TermCoder:
    """Maps texts (through the analyzer) or ready tokens to term ids, growing the vocabulary as it goes."""

    def __init__(self, analyzer: Analyzer, terms: Sequence[str] = ()) -> None:
        self.analyzer = analyzer
        self.vocab = Vocab(terms)
        self.raw = RawIds(analyzer, self.vocab)
        self.short_keys = ShortKeys(self.raw)
        self.lengths = np.zeros(0, np.int64)

    @property
    def terms(self) -> list[str]:
        return self.vocab.terms

    def encode_texts(self, texts: Sequence[str]) -> Triples:
        """Postings of a batch of texts (local doc numbers 0..n-1); sets `self.lengths`."""
        joined = _SEP.join(texts)
        if joined.count("\x00") != len(texts) - 1:  # NUL inside a text: blank it so it cannot split documents
            joined = _SEP.join(t.replace("\x00", " ") for t in texts)
        joined = self.analyzer.prepare(joined)
        if not joined.isascii():  # only the documents that are not ASCII: the pattern is slow on any character
            joined = "\x00".join(d if d.isascii() else _OTHER_SEPARATORS.sub(" ", d) for d in joined.split("\x00"))
        if joined.isascii():
            triples = self._encode_ascii(joined, len(texts))
            return triples if triples is not None else self._encode_general(joined, len(texts))
        # Real text has a curly quote or an accent here and there: split such a batch into its ASCII documents
        # (the fast path) and the others, unless most documents are not ASCII.
        docs = joined.split("\x00")
        ascii_rows = [i for i, doc in enumerate(docs) if doc.isascii()]
        if 2 * len(ascii_rows) < len(docs):
            return self._encode_general(joined, len(docs))
        del joined
        ascii_set = set(ascii_rows)
        other_rows = [i for i in range(len(docs)) if i not in ascii_set]
        parts, lengths = [], np.zeros(len(docs), np.int64)
        for rows, fast in ((ascii_rows, True), (other_rows, False)):
            if not rows:
                continue
            sub = "\x00".join([docs[i] for i in rows])
            part = self._encode_ascii(sub, len(rows)) if fast else None
            if part is None:
                part = self._encode_general(sub, len(rows))
            at = np.asarray(rows, dtype=np.int64)
            part.docs = at[part.docs].astype(np.int32)
            lengths[at] = self.lengths
            parts.append(part)
        self.lengths = lengths
        return Triples.concat(parts)

    def _encode_general(self, joined: str, n_docs: int) -> Triples:
        """`encode_texts` by the regular expression, for any prepared batch (documents split by NUL)."""
        tokens = _BATCH_RE.findall(joined)
        del joined
        arr = np.fromiter(map(self.raw.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        del tokens
        doc = np.cumsum(arr == _BOUNDARY)
        keep = arr >= 0
        return self._triples(arr[keep], doc[keep], n_docs)

    def _encode_ascii(self, joined: str, n_docs: int) -> Triples | None:
        """`encode_texts` for an ASCII batch, in numpy; None when it cannot be done exactly that way.

        Each letter or digit becomes a 6-bit code (0 elsewhere), so a token of up to 8 characters packs into
        48 bits, and (token, doc) into one integer: one sort then gives the postings and the distinct tokens.
        Longer tokens are keyed by a hash of their 8-byte words and checked against one copy of each key.
        """
        doc_bits = max(1, (n_docs - 1).bit_length())
        if _SHORT_BITS + doc_bits > 63:
            return None
        raw = joined.encode("ascii")
        n = len(raw)
        buf = np.zeros(n + 80, dtype=np.uint8)  # a zero before the text; room for reads of 8 words after it
        text = np.frombuffer(raw, dtype=np.uint8)
        separators = np.flatnonzero(text == 0) + 1  # offsets into buf
        code = buf[1 : n + 1]
        np.multiply(text - 47, (text - 48) < 10, out=code)  # 0-9 -> 1-10
        code += (text - 54) * ((text - 65) < 26)  # A-Z -> 11-36
        code += (text - 60) * ((text - 97) < 26)  # a-z -> 37-62
        edges = np.diff((code != 0).view(np.int8), prepend=np.int8(0), append=np.int8(0))
        bounds = np.flatnonzero(edges)  # a token's first byte, then the byte after its last, and so on
        starts = bounds[0::2] + 1
        lengths = bounds[1::2] + 1 - starts
        per_doc = np.diff(np.searchsorted(starts, separators), prepend=0, append=len(starts))
        doc = np.repeat(np.arange(len(per_doc), dtype=np.uint64), per_doc)
        words = np.ndarray(shape=(n + 73,), dtype="<u8", buffer=buf, strides=(1,))  # the 8 bytes from each offset

        def word(k: int, rows: np.ndarray) -> np.ndarray:
            return words[starts[rows] + 8 * k] & _LOW_BYTES[np.clip(lengths[rows] - 8 * k, 0, 8)]

        short = np.flatnonzero(lengths <= 8)
        packed = word(0, short)
        for mask, shift in _PACK_STEPS:  # eight 6-bit codes, one per byte -> 48 contiguous bits
            packed = (packed & mask) | ((packed & ~mask) >> shift)
        keys = (packed << np.uint64(doc_bits)) | doc[short]
        del packed
        keys.sort()
        postings, tf = runs(keys)
        tokens = postings >> np.uint64(doc_bits)
        first = run_starts(tokens)
        found = np.fromiter(map(self.short_keys.__getitem__, tokens[first].tolist()), np.int64, int(first.sum()))
        doc_mask = np.uint64((1 << doc_bits) - 1)
        terms, docs = found[np.cumsum(first) - 1], (postings & doc_mask).astype(np.int64)
        long = np.flatnonzero((lengths > 8) & (lengths <= self.analyzer.max_len))
        if len(long):
            grid = np.stack([word(k, long) for k in range(int(lengths[long].max() + 7) // 8)])  # 0 past the end
            hashed = grid[0].copy()
            for row in grid[1:]:
                hashed = (hashed * _MIX) ^ row
            hashes, inverse = _unique_inverse(hashed)
            first_of = np.full(len(hashes), len(long), dtype=np.int64)
            np.minimum.at(first_of, inverse, np.arange(len(long)))
            if not np.array_equal(grid, grid[:, first_of[inverse]]):
                return None  # two tokens share a hash
            spans = zip(starts[long[first_of]].tolist(), lengths[long[first_of]].tolist(), strict=True)
            found_long = np.fromiter((self.raw[joined[a - 1 : a - 1 + m]] for a, m in spans), np.int64, len(hashes))
            each = found_long[inverse]
            kept = each >= 0  # stopwords and other dropped tokens of more than 8 characters
            keys = (each[kept].astype(np.uint64) << np.uint64(doc_bits)) | doc[long[kept]]
            keys.sort()
            postings, tf_long = runs(keys)
            terms = np.concatenate([terms, (postings >> np.uint64(doc_bits)).astype(np.int64)])
            docs = np.concatenate([docs, (postings & doc_mask).astype(np.int64)])
            tf = np.concatenate([tf, tf_long])
            found = np.concatenate([found, found_long])
        keep = terms >= 0
        if not keep.all():
            terms, docs, tf = terms[keep], docs[keep], tf[keep]
        found = found[found >= 0]
        if len(unique_sorted(found)) < len(found):  # tokens that share a term (stemming): add them up
            keys = (terms << doc_bits) | docs
            order = np.argsort(keys)
            keys = keys[order]
            first = np.flatnonzero(run_starts(keys))
            terms, docs = keys[first] >> doc_bits, keys[first] & ((1 << doc_bits) - 1)
            tf = np.add.reduceat(tf[order], first)
        self.lengths = np.bincount(docs, weights=tf, minlength=n_docs).astype(np.int64)
        return Triples.compact(terms, docs, tf)

    def encode_tokens(self, docs: Sequence[Sequence[str]]) -> Triples:
        """Postings of a batch of ready-made token lists (no analyzer)."""
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        flat = itertools.chain.from_iterable(docs)
        ids = np.fromiter(map(self.vocab.__getitem__, flat), dtype=np.int64, count=int(lengths.sum()))
        doc = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
        return self._triples(ids, doc, len(docs))

    def _triples(self, terms: np.ndarray, doc: np.ndarray, n: int) -> Triples:
        self.lengths = np.bincount(doc, minlength=n).astype(np.int64)
        width = max(len(self.terms), 1)
        keys, tf = unique_counts(doc * width + terms)
        return Triples.compact(keys % width, keys // width, tf)


def _unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True), by one sort."""
    order = np.argsort(keys)
    ordered = keys[order]
    first = run_starts(ordered)
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


class Table:
    """Columns of new passages collected before they join the index."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.doc_keys: list[str] = []
        self.titles: list[str] = []
        self.sources: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.headings: list[str] = []
        self.lines: list[int] = []
        self.pages: list[int] = []
        self.one_doc_each = True  # only plain strings so far: each is its own document

    def __len__(self) -> int:
        return len(self.texts)

    def extend(self, batch: list[str | Passage], first_id: int) -> None:
        """Add a batch of passages."""
        if all(type(item) is str for item in batch):
            n = len(batch)
            self.texts.extend(batch)
            self.doc_keys.extend(map(str, range(first_id, first_id + n)))
            self.titles.extend([""] * n)
            self.sources.extend([""] * n)
            self.starts.extend([0] * n)
            self.ends.extend(map(len, batch))
            self.headings.extend([""] * n)
            self.lines.extend([0] * n)
            self.pages.extend([0] * n)
            return
        self.one_doc_each = False
        for i, item in enumerate(batch):
            self._append(item, first_id + i)

    def _append(self, item: str | Passage, number: int) -> None:
        if isinstance(item, str):
            self.extend([item], number)
            return
        if not isinstance(item, Passage):
            raise TypeError(f"expected str or Passage, got {type(item).__name__}")
        self.texts.append(item.text)
        self.doc_keys.append(item.doc_id)
        self.titles.append(item.title)
        self.sources.append(item.source)
        self.starts.append(item.start)
        self.ends.append(item.end)
        self.headings.append(join_heading(item.heading))
        self.lines.append(item.line)
        self.pages.append(item.page)


def indexed_text(item: str | Passage) -> str:
    """What the index tokenizes for a new passage: a plain string as it is, a `Passage`'s `indexed_text`."""
    return item if type(item) is str else item.indexed_text


# Below this many batches, starting worker processes costs more than it saves.
MIN_BATCHES_PER_WORKER = 4


def spread(n_texts: int, workers: int) -> bool:
    """Whether `encode_texts` tokenizes `n_texts` texts in worker processes (given `workers` > 1)."""
    return workers > 1 and -(-n_texts // BATCH) >= 2 * MIN_BATCHES_PER_WORKER


def pin_malloc_threshold() -> None:
    """Keep glibc giving large freed blocks straight back to the OS (Linux only; a no-op elsewhere).

    glibc starts by mmapping blocks over 128 KB, but raises that threshold each time one is freed, after which
    the per-batch arrays of a build pile up in a heap it cannot shrink: a 1M-passage build peaked about
    600 MB higher. The threshold is pinned at 8 MB: a batch's temporaries (a few MB each) reuse heap memory
    instead of being mapped, faulted in and unmapped every batch (which doubled the tokenizing time at 128 KB),
    while the postings kept for the merge are joined into blocks of BLOCK_BATCHES batches, large enough to be
    mapped and so given back as the merge frees them.
    """
    global _PINNED
    if _PINNED or not sys.platform.startswith("linux"):
        return
    _PINNED = True
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, _PINNED_THRESHOLD)
    except (OSError, AttributeError):  # musl or another libc: nothing to pin
        pass


_PINNED = False
_M_MMAP_THRESHOLD = -3
_PINNED_THRESHOLD = 8 << 20
BLOCK_BATCHES = 16


def auto_workers() -> int:
    """Worker processes to use by default for a large build: every core, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


def encode_texts(
    texts: Sequence[str],
    coder: TermCoder,
    *,
    first_doc: int = 0,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Triples], np.ndarray]:
    """Postings (term ids from `coder`, doc numbers from `first_doc`) and lengths of `texts`, in order."""
    starts = range(0, len(texts), BATCH)
    parts = _Blocks()
    lengths: list[np.ndarray] = []
    if not spread(len(texts), workers):
        for start in starts:
            batch = texts[start : start + BATCH]
            part = coder.encode_texts(batch)
            part.docs += first_doc + start
            parts.add(part)
            lengths.append(coder.lengths)
            if progress is not None:
                progress(len(batch))
    else:
        workers = min(workers, len(starts) // MIN_BATCHES_PER_WORKER)
        local_to_global: dict[int, np.ndarray] = {}
        batches = (list(texts[start : start + BATCH]) for start in starts)
        done = ordered_map(
            _encode_in_worker,
            batches,
            workers,
            doing="tokenizing passages",
            initializer=_init_worker,
            initargs=(coder.analyzer.to_dict(),),
        )
        with contextlib.closing(done):
            for start, (pid, new_terms, part, n_lengths) in zip(starts, done, strict=True):
                known = local_to_global.get(pid, np.zeros(0, np.int64))
                fresh = np.fromiter(map(coder.vocab.__getitem__, new_terms), np.int64, len(new_terms))
                known = local_to_global[pid] = np.concatenate([known, fresh])
                part.terms = known[part.terms].astype(np.int32)
                part.docs += first_doc + start
                parts.add(part)
                lengths.append(n_lengths)
                if progress is not None:
                    progress(len(n_lengths))
    return parts.done(), (np.concatenate(lengths) if lengths else np.zeros(0, np.int64))


@dataclass
class Encoded:
    """Passages tokenized before the build (`PassageEncoder`): postings whose term ids index `terms` and whose doc
    numbers are the passages' places (0..n-1) in the list they were made for, each passage's length, and the
    analyzer that made them (`Analyzer.to_dict()`): an index built with another analyzer refuses them."""

    terms: list[str]
    parts: list[Triples]
    lengths: np.ndarray
    analyzer: dict[str, Any]


class PassageEncoder:
    """Tokenizes passages while the files they come from are still being read, `batch` passages at a time.

    Indexing a folder reads files in worker processes (parallel.py) while this process waits for them; tokenizing
    each file's passages as they arrive (`add`, ingest's on_read) puts that wait to use, where tokenizing them all
    after the reading left one core idle. Files read but not indexed after all (duplicates found once every file
    is read) cost their tokens only: `encoded` keeps the postings of the passages it is given, in their order, and
    tokenizes there any it was not given before (a passage read again at the end).
    """

    def __init__(self, analyzer: Analyzer, batch: int = 1024, workers: int = 1) -> None:
        self.coder = TermCoder(analyzer)
        self.batch = batch
        self.workers = workers
        self._pending: list[Passage] = []
        self._pending_sources: list[tuple[str, int]] = []
        self._parts: list[Triples] = []
        self._lengths: list[np.ndarray] = []
        self._where: dict[str, tuple[int, int, int]] = {}  # source -> (batch number, first doc in it, passages)

    def add(self, source: str, passages: Sequence[Passage]) -> None:
        """Tokenize the passages of one file (`source`), now or with the next full batch; a file of so many
        passages that `encode_texts` would spread them over worker processes waits for `encoded`, which does."""
        if not passages or spread(len(passages), self.workers):
            return
        self._pending_sources.append((source, len(passages)))
        self._pending.extend(passages)
        if len(self._pending) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        first = 0
        for source, n in self._pending_sources:
            self._where[source] = (len(self._parts), first, n)
            first += n
        self._parts.append(self.coder.encode_texts([p.indexed_text for p in self._pending]))
        self._lengths.append(self.coder.lengths)
        self._pending, self._pending_sources = [], []

    def encoded(self, passages: Sequence[Passage]) -> Encoded:
        """The postings of `passages` (doc numbers: their places in the list), from what `add` tokenized where a
        file's passages run together in the list as they were added, tokenized now where not."""
        self._flush()
        places = [np.full(len(lengths), -1, np.int64) for lengths in self._lengths]
        late: list[int] = []
        at = 0
        for source, run in itertools.groupby(passages, key=lambda p: p.source):
            n = sum(1 for _ in run)
            where = self._where.get(source)
            if where is not None and where[2] == n:
                number, first, _ = where
                places[number][first : first + n] = np.arange(at, at + n)
            else:
                late.extend(range(at, at + n))
            at += n
        lengths = np.zeros(len(passages), np.int64)
        kept: list[Triples] = []
        batches = list(zip(self._parts, self._lengths, places, strict=True))
        if late:
            late_places = np.asarray(late, dtype=np.int64)
            late_parts, late_lengths = encode_texts(
                [passages[i].indexed_text for i in late], self.coder, workers=self.workers
            )
            lengths[late_places] = late_lengths
            batches += [(part, None, late_places) for part in late_parts]
        for part, part_lengths, place in batches:
            if part_lengths is not None:
                used = place >= 0
                lengths[place[used]] = part_lengths[used]
            docs = place[part.docs]
            keep = docs >= 0
            kept.append(Triples(part.terms[keep], docs[keep].astype(np.int32), part.tf[keep]))
        return Encoded(list(self.coder.terms), kept, lengths, self.coder.analyzer.to_dict())


class _Blocks:
    """The postings of a build, batch by batch, joined into one block every BLOCK_BATCHES batches."""

    def __init__(self) -> None:
        self.blocks: list[Triples] = []
        self.pending: list[Triples] = []

    def add(self, part: Triples) -> None:
        self.pending.append(part)
        if len(self.pending) == BLOCK_BATCHES:
            self.blocks.append(Triples.concat(self.pending))
            self.pending = []

    def done(self) -> list[Triples]:
        return self.blocks + self.pending


_WORKER: dict[str, Any] = {}


def _init_worker(analyzer: dict[str, Any]) -> None:
    _WORKER["coder"] = TermCoder(Analyzer.from_dict(analyzer))
    _WORKER["sent"] = 0


def _encode_in_worker(texts: list[str]) -> tuple[int, list[str], Triples, np.ndarray]:
    coder: TermCoder = _WORKER["coder"]
    part = coder.encode_texts(texts)
    terms = coder.terms
    new_terms = terms[_WORKER["sent"] :]
    _WORKER["sent"] = len(terms)
    return os.getpid(), new_terms, part, coder.lengths
