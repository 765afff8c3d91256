"""BM25 retrieval over the user's own files: ingestion, the analyzer, and a persistent, incremental index.

Scores equal rank-bm25's BM25Okapi (the reference in tests), weights are precomputed into term-major postings
(float32 weights, int32 ids) saved as .npy files and memory-mapped back, and queries touch only the postings
of their terms. See `index.BM25Index` for the index, `ingest` for formats and chunking, `storage` for the
on-disk format.
"""

from __future__ import annotations

from offline_agent.retrieval.analyzer import Analyzer
from offline_agent.retrieval.catalog import (
    build_from_paths,
    index_path,
    indexes_dir,
    list_indexes,
    open_corpus,
    update_from_paths,
)
from offline_agent.retrieval.index import BM25Index
from offline_agent.retrieval.ingest import Ingested, IngestOptions, ingest_paths
from offline_agent.retrieval.passages import Passage, SearchResult
from offline_agent.retrieval.sentences import chunk_spans, first_sentence, split_sentences

__all__ = [
    "Analyzer",
    "BM25Index",
    "IngestOptions",
    "Ingested",
    "Passage",
    "SearchResult",
    "build_from_paths",
    "chunk_spans",
    "first_sentence",
    "index_path",
    "indexes_dir",
    "ingest_paths",
    "list_indexes",
    "open_corpus",
    "split_sentences",
    "update_from_paths",
]
