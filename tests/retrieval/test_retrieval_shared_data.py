"""Real data from ../shared/data: HotpotQA's paragraph pool and SciFact's BEIR corpus ingest as they are, and
scores on the pool equal rank-bm25's. Without the data these tests skip with the reason, and fail under CI=true."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from support import need_shared_data

from offline_agent.retrieval import Analyzer, BM25Index, IngestOptions, ingest_paths

POOL = ("hotpotqa", "hotpot_pool5716_corpus.jsonl")
DEV = ("hotpotqa", "hotpot_dev200_distractor.json")
SCIFACT = ("scifact", "corpus.jsonl")

pytestmark = pytest.mark.shared_data


def _need(parts: tuple[str, ...]) -> Path:
    return need_shared_data(*parts)


@pytest.fixture(scope="module")
def pool_passages():
    # Chunks far larger than any paragraph: one passage per record, as in the pool.
    return ingest_paths(_need(POOL), IngestOptions(chunk_size=5000, chunk_overlap=0)).passages


def test_shared_data_hotpot_pool_ingests_as_is(pool_passages) -> None:
    assert len(pool_passages) == 5716
    first = pool_passages[0]
    assert (first.doc_id, first.title) == ("hp00000", "Ed Wood (film)")
    assert first.text.startswith("Ed Wood is a 1994 American")


def test_shared_data_beir_corpus_ingests_as_is() -> None:
    passages = ingest_paths(_need(SCIFACT), IngestOptions(chunk_size=5000, chunk_overlap=0)).passages
    assert len({p.doc_id for p in passages}) == 5183
    assert passages[0].doc_id == "4983" and passages[0].title.startswith("Microstructural development")


def test_shared_data_hotpot_scores_equal_rank_bm25(pool_passages) -> None:
    analyzer = Analyzer()
    index = BM25Index.build(pool_passages, analyzer=analyzer)
    reference = BM25Okapi([analyzer.tokens(f"{p.title}\n{p.text}") for p in pool_passages])
    questions = [q["question"] for q in json.loads(_need(DEV).read_text())[:12]]
    for question in questions:
        tokens = analyzer.tokens(question)
        ref = reference.get_scores(tokens)
        mine = index.get_scores(tokens)
        np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(ref).max())))
        top = index.search(question, k=5)
        assert top.ids.tolist() == sorted(range(len(mine)), key=lambda i: (-mine[i], i))[:5]
