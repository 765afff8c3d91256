"""BM25Index behaviour: search results, ties, odd queries, updates equal to fresh builds, passages."""

from __future__ import annotations

import numpy as np
import pytest

from offline_agent.errors import ConfigError, RetrievalError
from offline_agent.retrieval import Analyzer, BM25Index, Passage, SearchResult

DOCS = [
    "The Eiffel Tower is a lattice tower in Paris.",
    "Tower Bridge crosses the Thames in London.",
    "Paris is the capital of France.",
    "The Thames flows through London.",
    "Gustave Eiffel built bridges and towers.",
]


@pytest.fixture
def index() -> BM25Index:
    return BM25Index.build(DOCS)


def test_search_returns_ids_scores_and_passages(index: BM25Index) -> None:
    result = index.search("eiffel tower", k=3)
    assert isinstance(result, SearchResult)
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float32
    assert result.ids[0] == 0
    assert [p.id for p in result.passages] == result.ids.tolist()
    assert result.passages[0] == Passage(0, "0", "", DOCS[0], "", 0, len(DOCS[0]))
    assert np.all(np.diff(result.scores) <= 0)


@pytest.mark.parametrize("query", ["", "   ", "the of and", "zzzqqq", "!!!", "the zzz"])
def test_query_without_indexed_terms_returns_no_hits(index: BM25Index, query: str) -> None:
    result = index.search(query)
    assert len(result.ids) == 0 and len(result.scores) == 0 and result.passages == []


def test_ten_thousand_word_query_works(index: BM25Index) -> None:
    query = " ".join(["london"] * 5000 + [f"unknown{i}" for i in range(5000)])
    result = index.search(query, k=2)
    assert set(result.ids.tolist()) == {1, 3}


def test_ties_break_by_id_ascending() -> None:
    index = BM25Index.build(["same words here", "other text", "same words here", "same words here"])
    result = index.search("same words", k=3)
    assert result.ids.tolist() == [0, 2, 3]
    assert len(set(result.scores.tolist())) == 1
    assert index.search("same words", k=2).ids.tolist() == [0, 2]


def test_k_larger_than_hits_and_search_many(index: BM25Index) -> None:
    assert len(index.search("london", k=100).ids) == 2
    many = index.search_many(["london", "paris eiffel"], k=2)
    for got, query in zip(many, ["london", "paris eiffel"], strict=True):
        want = index.search(query, k=2)
        assert got.ids.tolist() == want.ids.tolist() and got.scores.tolist() == want.scores.tolist()


def test_repeated_query_terms_count_twice_like_rank_bm25(index: BM25Index) -> None:
    once = index.get_scores(["london"])
    twice = index.get_scores(["london", "london"])
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)


def _by_text(index: BM25Index, query: str) -> dict[str, float]:
    result = index.search(query, k=100)
    return {p.text: float(s) for p, s in zip(result.passages, result.scores, strict=True)}


@pytest.mark.parametrize("variant", ["okapi", "lucene", "plus"])
def test_add_and_delete_equal_a_fresh_build(variant: str) -> None:
    index = BM25Index.build(DOCS[:3], variant=variant)
    new_ids = index.add(DOCS[3:])
    assert new_ids.tolist() == [3, 4]
    index.delete([1])
    fresh = BM25Index.build([DOCS[0], DOCS[2], DOCS[3], DOCS[4]], variant=variant)
    assert len(index) == len(fresh) == 4
    for query in ("tower", "london thames", "eiffel paris bridges", "the"):
        assert _by_text(index, query) == _by_text(fresh, query)


def test_ids_are_stable_across_updates(index: BM25Index) -> None:
    before = index.passage(4)
    index.delete([0, 2])
    assert index.passage(4) == before
    with pytest.raises(KeyError):
        index.passage(0)
    with pytest.raises(KeyError):
        index.passage(99)
    assert index.add(["A new passage about towers"]).tolist() == [5]
    assert index.ids().tolist() == [1, 3, 4, 5]
    assert 0 not in index.search("eiffel tower", k=10).ids


def test_delete_everything_then_add(index: BM25Index) -> None:
    index.delete(range(5))
    assert len(index) == 0
    assert index.search("tower").passages == []
    index.add(["tower"])
    assert index.search("tower").ids.tolist() == [5]


def test_passages_keep_doc_ids_titles_and_order() -> None:
    parts = [
        Passage(0, "doc-a", "Title A", "second part", "a.txt", 20, 31),
        Passage(0, "doc-b", "Title B", "other", "b.txt", 0, 5),
        Passage(0, "doc-a", "Title A", "first part", "a.txt", 0, 10),
    ]
    index = BM25Index.build(parts)
    assert [p.text for p in index.passages_of("doc-a")] == ["first part", "second part"]
    assert index.passages_of("missing") == []
    # The title is indexed with the text.
    assert index.search("title b").ids.tolist()[0] == 1


def test_analyzer_is_used_at_query_time() -> None:
    pytest.importorskip("Stemmer")
    index = BM25Index.build(["running quickly", "walks slowly"], analyzer=Analyzer(stemmer="english"))
    assert index.search("runs").ids.tolist() == [0]
    assert index.search("walking").ids.tolist() == [1]


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown BM25 variant 'bm99'"):
        BM25Index.build(["x"], variant="bm99")
    with pytest.raises(ConfigError, match="unknown stopword list"):
        Analyzer(stopwords="xx")


def test_unknown_stemmer_names_the_choices() -> None:
    pytest.importorskip("Stemmer")
    with pytest.raises(ConfigError, match="unknown stemmer 'klingon'"):
        Analyzer(stemmer="klingon")


def test_missing_stemmer_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args, **kwargs):
        if name == "Stemmer":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(RetrievalError, match="pip install PyStemmer"):
        Analyzer(stemmer="english")


def test_empty_build_is_searchable() -> None:
    index = BM25Index.build([])
    assert len(index) == 0
    assert index.search("anything").passages == []


@pytest.mark.parametrize("colliding", [False, True])
def test_term_lookup_one_by_one_and_batched_agree(monkeypatch: pytest.MonkeyPatch, colliding: bool) -> None:
    """`find_many` (a query's terms in one binary search) gives what `find` gives, also where terms share a hash
    (forced here: every term hashed by its length, so most of the vocabulary collides). The index's own searches
    go through the hash table too (a vocabulary this small would otherwise be read into a dict, `TermIds`)."""
    from offline_agent.retrieval import postings

    if colliding:
        monkeypatch.setattr(postings, "term_hash", len)
    monkeypatch.setattr(postings.TermIds, "FULL_VOCAB", 0)
    texts = ["the river liffey flows through dublin", "joyce was born in dublin", "a cat sat on the mat", "rivers"]
    index = BM25Index.build(texts)
    table = index._postings
    vocab = table.vocab.tolist()
    asked = [*vocab, "thames", "", "dublinx", "river", "zz", *reversed(vocab)]
    assert table.find_many(asked) == [table.find(term) for term in asked]
    assert [table.find(term) for term in vocab] == list(range(len(vocab)))
    assert table.find_many([]) == []
    assert sorted(index.search_ids("dublin")[0].tolist()) == [0, 1]
    assert index.search_ids("rivers thames")[0].tolist() == [3]


def test_term_lookup_by_dictionary_equals_the_hash_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # A small vocabulary is read into one dict on the first search; a large one is looked up by hash. Both must
    # give every term the same id, unknown and non-ASCII terms included, and updates must see new terms.
    from offline_agent.retrieval.postings import TermIds

    docs = [*DOCS, "Zürich und Genève, naïve café", "東京 タワー tower"]
    queries = ["eiffel tower", "zürich genève", "東京 tower", "café unknownword", "the the tower tower", "xyz"]
    terms = ["tower", "zürich", "東京", "nope"]
    small = BM25Index.build(docs)
    want = [(r.ids.tolist(), r.scores.tolist()) for r in small.search_many(queries, k=5)]
    idf = small.term_idf(iter(terms))
    monkeypatch.setattr(TermIds, "FULL_VOCAB", 0)
    large = BM25Index.build(docs)
    assert [(r.ids.tolist(), r.scores.tolist()) for r in large.search_many(queries, k=5)] == want
    assert large.term_idf(terms) == idf
    assert small.term_idf(["nope"]) == {"nope": 0.0}
    assert small._term_ids._all is not None and large._term_ids._all is None
    for index in (small, large):
        index.add(["Reykjavik lies far north."])
        assert index.search("reykjavik", k=1).ids.tolist() == [len(docs)]


@pytest.mark.parametrize(
    "strings",
    [
        ["plain", "", "ascii only"],
        ["naïve", "", "日本語", "emoji 😀 x", "a"],
        ["lone \ud800 surrogate", "ok", ""],  # stored with surrogatepass: not valid UTF-8 as a whole
        [],
    ],
)
def test_string_column_tolist_equals_reading_each_row(strings: list[str]) -> None:
    from offline_agent.retrieval.columns import StringColumn

    column = StringColumn.from_strings(strings)
    assert column.tolist() == [column[i] for i in range(len(column))] == strings
