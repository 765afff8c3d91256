"""BM25 retrieval over the user's own files: ingestion, the analyzer, and a persistent, incremental index.

Scores equal rank-bm25's BM25Okapi (the reference in tests), weights are precomputed into term-major postings
(float32 weights, int32 ids) saved as .npy files and memory-mapped back, and queries touch only the postings
of their terms. See `index.BM25Index` for the index, `ingest` for formats and chunking, `storage` for the
on-disk format.

Each name is imported on first use, as in the top-level package: a worker process that reads files (parallel.py)
imports the readers and the chunker only, not the index, its storage and numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offline_agent.lazy import lazy_names

# Each public name -> the module that defines it.
_EXPORTS = {
    "Analyzer": "offline_agent.retrieval.analyzer",
    "BM25Index": "offline_agent.retrieval.index",
    "IngestOptions": "offline_agent.retrieval.ingest",
    "Ingested": "offline_agent.retrieval.ingest",
    "Passage": "offline_agent.retrieval.passages",
    "ReadLimits": "offline_agent.retrieval.readers.limits",
    "SearchResult": "offline_agent.retrieval.passages",
    "build_from_paths": "offline_agent.retrieval.catalog",
    "chunk_spans": "offline_agent.retrieval.sentences",
    "first_sentence": "offline_agent.retrieval.sentences",
    "index_path": "offline_agent.retrieval.catalog",
    "indexes_dir": "offline_agent.retrieval.catalog",
    "ingest_paths": "offline_agent.retrieval.ingest",
    "list_indexes": "offline_agent.retrieval.catalog",
    "open_corpus": "offline_agent.retrieval.catalog",
    "split_sentences": "offline_agent.retrieval.sentences",
    "update_from_paths": "offline_agent.retrieval.catalog",
}
__all__ = [
    "Analyzer",
    "BM25Index",
    "IngestOptions",
    "Ingested",
    "Passage",
    "ReadLimits",
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

if TYPE_CHECKING:
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
    from offline_agent.retrieval.readers.limits import ReadLimits
    from offline_agent.retrieval.sentences import chunk_spans, first_sentence, split_sentences


__getattr__ = lazy_names(__name__, _EXPORTS, globals())
