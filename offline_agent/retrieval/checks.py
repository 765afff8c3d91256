"""Structural checks of a saved index's arrays on load, so that a damaged file fails with one line naming it.

Every file of an index has a sha256 in its manifest, but hashing a large index on every load would cost more
than the load itself (mmap makes loading nearly free), so `storage.read_index` hashes only indexes up to
`storage.VERIFY_ON_LOAD_MAX_BYTES` and `offline-agent index info --verify` hashes any. What is checked here, on
every load, is what a search relies on not to crash or to read the wrong rows: dtypes and shapes, lengths that
must agree with each other and with meta.json, offsets that start at 0, never decrease and end at their blob's
length, passage and document ids within range, the vocabulary hash table in order and complete, flags that are
0 or 1, and per-term scores that are finite numbers. That is one vectorized pass over each per-term and
per-passage array, and a min and a max over the postings' passage ids: the one per-posting check, because an
id out of range is what made searches crash.

What no structural check can see (a weight, a term frequency or a byte of text changed into another value) is
what the checksums are for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from offline_agent.errors import RetrievalError

# The string columns of an index: NAME_blob.npy (UTF-8 bytes) and NAME_offsets.npy (n + 1 int64 offsets).
STRING_COLUMNS = ("vocab", "text", "doc_key", "doc_title", "doc_source")
# Per-passage positions, written since heading paths and lines were kept (an older index has none, nor the
# heading column, heading_blob.npy and heading_offsets.npy).
POSITION_ARRAYS = ("p_line", "p_page")
# Every other array, with the dtype kinds it may have ("i"/"u" integers, "f" floats).
_INTEGERS = "iu"
ARRAYS: dict[str, str] = {
    "post_offsets": _INTEGERS,
    "post_docs": _INTEGERS,
    "post_tf": _INTEGERS,
    "post_weights": "f",
    "idf": "f",
    "vocab_hash": "u",
    "vocab_hash_ids": _INTEGERS,
    "impact_offsets": _INTEGERS,
    "impact_docs": _INTEGERS,
    "impact_weights": "f",
    "term_tail": "f",
    "dl": _INTEGERS,
    "live": _INTEGERS,
    "p_doc": _INTEGERS,
    "p_start": _INTEGERS,
    "p_end": _INTEGERS,
}


class _Damaged(Exception):
    """One failed check: the array's name and why."""

    def __init__(self, name: str, why: str, *, other: str | None = None) -> None:
        super().__init__(name, why)
        self.name = name
        self.why = why
        self.other = other  # the file at fault when it is not `name` (two files that disagree)


def check_index_arrays(gen_dir: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Raise RetrievalError("corrupt index file GEN/NAME.npy: why") for the first array that fails a check."""
    try:
        _check(arrays, meta)
    except _Damaged as damaged:
        other = f" (or {_file_name(damaged.other)})" if damaged.other else ""
        raise RetrievalError(
            f"corrupt index file {gen_dir / _file_name(damaged.name)}{other}: {damaged.why}; rebuild the index"
        ) from None


def _file_name(name: str) -> str:
    return name if name.endswith(".json") else f"{name}.npy"


def _check(a: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    expected = dict(ARRAYS)
    for column in STRING_COLUMNS:
        expected[f"{column}_blob"] = "u"
        expected[f"{column}_offsets"] = _INTEGERS
    for name, kinds in expected.items():
        if name not in a:
            raise _Damaged(name, "missing from the manifest")
        if a[name].ndim != 1 or a[name].dtype.kind not in kinds:
            raise _Damaged(name, f"unexpected array {a[name].dtype}{list(a[name].shape)}")
    for column in STRING_COLUMNS:
        _offsets(a, f"{column}_offsets", len(a[f"{column}_blob"]))
    _check_positions(a)

    rows = len(a["dl"])
    n_terms = len(a["idf"])
    n_docs = len(a["doc_key_offsets"]) - 1
    for name in ("live", "p_doc", "p_start", "p_end"):
        _length(a, name, rows, "passages")
    _length(a, "text_offsets", rows + 1, "passages")
    for name in ("vocab_offsets", "post_offsets", "impact_offsets"):
        _length(a, name, n_terms + 1, "terms")
    for name in ("vocab_hash", "vocab_hash_ids", "term_tail"):
        _length(a, name, n_terms, "terms")
    for name in ("doc_title_offsets", "doc_source_offsets"):
        _length(a, name, n_docs + 1, "documents")
    postings = len(a["post_docs"])
    for name in ("post_tf", "post_weights"):
        _length(a, name, postings, "postings")
    _length(a, "impact_weights", len(a["impact_docs"]), "impact entries")

    _offsets(a, "post_offsets", postings)
    _offsets(a, "impact_offsets", len(a["impact_docs"]))
    _within(a, "post_docs", 0, rows, "passage ids")
    _within(a, "impact_docs", 0, rows, "passage ids")
    _within(a, "vocab_hash_ids", 0, n_terms, "term ids")
    if n_terms and not bool((np.bincount(a["vocab_hash_ids"], minlength=n_terms) == 1).all()):
        raise _Damaged("vocab_hash_ids", "a term missing from the hash table")
    if len(a["vocab_hash"]) > 1 and not bool((a["vocab_hash"][1:] >= a["vocab_hash"][:-1]).all()):
        raise _Damaged("vocab_hash", "hash table out of order")
    _within(a, "live", 0, 2, "flags (0 or 1)")
    _within(a, "dl", 0, None, "lengths")
    _within(a, "p_doc", -1, n_docs, "document ids")
    live = np.asarray(a["live"]).astype(bool)
    live_docs = np.asarray(a["p_doc"])[live]
    if rows and bool((live_docs < 0).any()):
        raise _Damaged("p_doc", "a live passage without a document", other="live")
    if n_docs and not bool(np.bincount(live_docs, minlength=n_docs).all()):  # documents are renumbered on delete
        raise _Damaged("p_doc", "a document without a passage", other="live")
    _within(a, "p_start", 0, None, "offsets")
    if rows and bool((np.asarray(a["p_end"]) < np.asarray(a["p_start"])).any()):
        raise _Damaged("p_end", "a passage that ends before it starts", other="p_start")
    for name in ("idf", "term_tail"):  # per term; the per-posting weights are left to the checksums
        if len(a[name]) and not bool(np.isfinite(a[name]).all()):
            raise _Damaged(name, "scores that are not finite numbers")

    for key, actual, name in (
        ("rows", rows, "dl"),
        ("passages", int(np.count_nonzero(live)), "live"),
        ("documents", n_docs, "doc_key_offsets"),
        ("terms", n_terms, "idf"),
        ("postings", postings, "post_docs"),
    ):
        if key in meta and meta[key] != actual:
            raise _Damaged(name, f"{actual} {key}, meta.json says {meta[key]}", other="meta.json")


def _check_positions(a: dict[str, np.ndarray]) -> None:
    """The per-passage heading and position arrays, which an index written before they were kept lacks: when there,
    they must be whole (both files of the heading column, all three arrays) and as long as the passage table."""
    names = [*POSITION_ARRAYS, "heading_blob", "heading_offsets"]
    present = [name for name in names if name in a]
    if not present:
        return
    for name in names:
        if name not in a:
            raise _Damaged(name, "missing from the manifest", other=present[0])
    for name in names:
        kinds = "u" if name == "heading_blob" else _INTEGERS
        if a[name].ndim != 1 or a[name].dtype.kind not in kinds:
            raise _Damaged(name, f"unexpected array {a[name].dtype}{list(a[name].shape)}")
    _offsets(a, "heading_offsets", len(a["heading_blob"]))
    rows = len(a["dl"])
    _length(a, "heading_offsets", rows + 1, "passages")
    for name in POSITION_ARRAYS:
        _length(a, name, rows, "passages")
        _within(a, name, 0, None, "positions")


def _length(a: dict[str, np.ndarray], name: str, expected: int, what: str) -> None:
    if len(a[name]) != expected:
        raise _Damaged(name, f"{len(a[name])} entries where the index has {expected} {what}")


def _offsets(a: dict[str, np.ndarray], name: str, end: int) -> None:
    """Offsets into an array of length `end`: at least one, starting at 0, never decreasing, ending at `end`."""
    offsets = a[name]
    if len(offsets) == 0 or int(offsets[0]) != 0 or int(offsets[-1]) != end:
        raise _Damaged(name, "offsets that do not span their data")
    if len(offsets) > 1 and not bool((offsets[1:] >= offsets[:-1]).all()):
        raise _Damaged(name, "offsets out of order")


def _within(a: dict[str, np.ndarray], name: str, low: int, high: int | None, what: str) -> None:
    """Every value in [low, high) (high None: no upper bound)."""
    values = a[name]
    if not len(values):
        return
    if int(values.min()) < low or (high is not None and int(values.max()) >= high):
        raise _Damaged(name, f"{what} out of range")
