"""Scores against the reference: rank-bm25 itself on random corpora (hypothesis), for each variant, searched by
the compiled kernel (when it is built) and by numpy alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi, BM25Plus

from offline_agent.retrieval import Analyzer, BM25Index, kernel, postings

WORDS = [f"w{i}" for i in range(40)]
token = st.sampled_from(WORDS)
corpora = st.lists(st.lists(token, min_size=0, max_size=30), min_size=1, max_size=60).filter(
    lambda c: any(c)  # rank-bm25 divides by the vocabulary size
)
queries = st.lists(st.sampled_from([*WORDS, "unknown", "zzz"]), min_size=1, max_size=8)
PARITY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True, params=["kernel", "numpy"])
def search_path(request: pytest.FixtureRequest):
    """Every test twice: indexes built with the kernel (skipped when it is not built), then with numpy only."""
    if request.param == "kernel" and kernel.KERNEL is None:
        pytest.skip("the search kernel is not built: numpy only")
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "numpy":
            mp.setattr(postings, "KERNEL", None)
        yield request.param


def _close(mine: np.ndarray, ref: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(ref).max()) if len(ref) else 1.0)
    np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-6 * scale)


def _check_ranking(index: BM25Index, corpus: list[list[str]], query: list[str], mine: np.ndarray, k: int) -> None:
    """search_tokens returns the hits ordered by float32 score desc then id asc."""
    result = index.search_tokens(query, k)
    hits = np.flatnonzero([any(t in set(d) for t in query) for d in corpus])
    order = sorted(hits.tolist(), key=lambda i: (-mine[i], i))[:k]
    assert result.ids.tolist() == order
    np.testing.assert_array_equal(result.scores, mine[order])


@PARITY
@given(corpus=corpora, query=queries, k=st.integers(1, 12))
def test_okapi_scores_equal_rank_bm25(corpus: list[list[str]], query: list[str], k: int) -> None:
    index = BM25Index.from_tokens(corpus)
    mine = index.get_scores(query)
    _close(mine, BM25Okapi(corpus).get_scores(query))
    _check_ranking(index, corpus, query, mine, k)


@PARITY
@given(corpus=corpora, query=queries, k1=st.floats(0.5, 2.0), b=st.floats(0.0, 1.0), eps=st.floats(0, 1))
def test_okapi_parameters_equal_rank_bm25(corpus, query, k1: float, b: float, eps: float) -> None:
    mine = BM25Index.from_tokens(corpus, k1=k1, b=b, epsilon=eps).get_scores(query)
    with np.errstate(invalid="ignore"):
        ref = BM25Okapi(corpus, k1=k1, b=b, epsilon=eps).get_scores(query)
    # rank-bm25 gives NaN (0/0) to an empty document when b == 1; it holds no term, so it is no hit here.
    _close(mine, np.nan_to_num(ref, nan=0.0))


@PARITY
@given(corpus=corpora, query=queries)
def test_plus_scores_equal_rank_bm25_on_hits(corpus: list[list[str]], query: list[str]) -> None:
    mine = BM25Index.from_tokens(corpus, variant="plus").get_scores(query)
    ref = BM25Plus(corpus).get_scores(query)
    hit = np.array([any(t in d for t in query) for d in corpus])
    _close(mine[hit], ref[hit])
    assert not mine[~hit].any()  # documents without a query term are not hits


@PARITY
@given(corpus=corpora, query=queries)
def test_lucene_scores_equal_the_formula(corpus: list[list[str]], query: list[str]) -> None:
    n = len(corpus)
    avgdl = sum(map(len, corpus)) / n
    ref = np.zeros(n)
    for q in query:
        df = sum(q in d for d in corpus)
        if not df:
            continue
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(corpus):
            tf = d.count(q)
            ref[i] += idf * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * len(d) / avgdl))
    _close(BM25Index.from_tokens(corpus, variant="lucene").get_scores(query), ref)


TEXT = st.text(alphabet="abcde fgh.,ÉéßİĲ\n-_1", min_size=0, max_size=80)


@PARITY
@given(texts=st.lists(TEXT, min_size=1, max_size=30), query=TEXT)
def test_text_build_equals_rank_bm25_on_analyzer_tokens(texts: list[str], query: str) -> None:
    analyzer = Analyzer(stopwords=None)
    tokens = [analyzer.tokens(t) for t in texts]
    if not any(tokens):
        return
    index = BM25Index.build(texts, analyzer=analyzer)
    _close(index.get_scores(query), BM25Okapi(tokens).get_scores(analyzer.tokens(query)))


@pytest.mark.parametrize("variant", ["okapi", "lucene", "plus"])
def test_every_code_path_ranks_the_same(variant: str) -> None:
    rng = np.random.default_rng(7)
    corpus = [[f"w{x}" for x in rng.zipf(1.3, size=rng.integers(1, 40)) % 50] for _ in range(400)]
    index = BM25Index.from_tokens(corpus, variant=variant)
    for q in (["w1"], ["w1", "w2"], ["w3", "w3", "w9", "w40"], [f"w{i}" for i in range(12)]):
        scores = index.get_scores(q)
        full = index.search_tokens(q, 400)
        top = index.search_tokens(q, 7)
        assert top.ids.tolist() == full.ids[:7].tolist()
        np.testing.assert_array_equal(full.scores, scores[full.ids])
        keys = list(zip((-full.scores).tolist(), full.ids.tolist(), strict=True))
        assert keys == sorted(keys)


@pytest.mark.parametrize("variant", ["okapi", "lucene", "plus"])
def test_skipping_frequent_terms_changes_nothing(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The threshold shortcut (candidates from rare terms and the best passages of frequent ones) returns
    exactly what scoring everything does."""

    rng = np.random.default_rng(11)
    words = np.array([f"w{i}" for i in range(2000)])
    weights = 1.0 / np.arange(1, 2001)
    corpus = [list(rng.choice(words, size=rng.integers(5, 60), p=weights / weights.sum())) for _ in range(3000)]
    monkeypatch.setattr(postings, "IMPACT_TOP", 64)
    monkeypatch.setattr(postings, "KERNEL", None)  # the numpy path's shortcut (the kernel: test_retrieval_kernel)
    index = BM25Index.from_tokens(corpus, variant=variant)
    queries = [[words[0], words[1], words[rng.integers(100, 2000)]] for _ in range(40)]
    queries += [[words[rng.integers(0, 3)], words[rng.integers(300, 2000)]] for _ in range(40)]
    queries += [[words[0], words[0], words[5], words[rng.integers(50, 2000)]] for _ in range(20)]

    monkeypatch.setattr(postings, "_PRUNE_FROM", 10**12)
    full = [index.search_tokens(q, k) for q in queries for k in (1, 10)]
    calls = []
    real = postings.Searcher._pruned

    def spy(self, *args):
        result = real(self, *args)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(postings.Searcher, "_pruned", spy)
    monkeypatch.setattr(postings, "_PRUNE_FROM", 0)
    pruned = [index.search_tokens(q, k) for q in queries for k in (1, 10)]
    assert sum(calls) > 50  # the shortcut was taken for most queries
    for a, b in zip(full, pruned, strict=True):
        assert a.ids.tolist() == b.ids.tolist()
        assert a.scores.tolist() == b.scores.tolist()


def _zipf_corpus(seed: int, n_docs: int) -> tuple[np.ndarray, list[list[str]]]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(500)])
    p = 1.0 / np.arange(1, 501)
    return words, [list(rng.choice(words, size=rng.integers(5, 40), p=p / p.sum())) for _ in range(n_docs)]


def test_weights_computed_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:

    _, corpus = _zipf_corpus(5, 400)
    whole = BM25Index.from_tokens(corpus)._postings.weights
    monkeypatch.setattr(postings, "_WEIGHT_CHUNK", 7)  # chunk edges fall inside and between terms
    chunked = BM25Index.from_tokens(corpus)._postings.weights
    assert np.asarray(whole).tobytes() == np.asarray(chunked).tobytes()


def test_top_k_from_the_per_passage_sums_equals_the_postings_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Queries of frequent words (postings over a quarter of the corpus) take their top k from the dense sums."""

    words, corpus = _zipf_corpus(9, 2000)
    monkeypatch.setattr(postings, "KERNEL", None)  # a numpy path
    index = BM25Index.from_tokens(corpus)
    rng = np.random.default_rng(3)
    queries = [list(rng.choice(words[:30], size=rng.integers(2, 9))) for _ in range(60)]
    monkeypatch.setattr(postings, "_PRUNE_FROM", 10**12)
    taken = []
    real = postings._dense_top
    monkeypatch.setattr(postings, "_dense_top", lambda s, k: taken.append(1) or real(s, k))
    dense = [index.search_tokens(q, k) for q in queries for k in (1, 10, 50)]
    assert len(taken) > 100
    monkeypatch.setattr(postings, "_dense_top", lambda s, k: None)
    sparse = [index.search_tokens(q, k) for q in queries for k in (1, 10, 50)]
    for a, b in zip(dense, sparse, strict=True):
        assert a.ids.tolist() == b.ids.tolist()
        assert a.scores.tolist() == b.scores.tolist()
