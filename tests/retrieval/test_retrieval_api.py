"""The public face of offline_agent.retrieval: names, sorted __all__, and the shapes the agent relies on."""

from __future__ import annotations

import dataclasses

import offline_agent.retrieval as retrieval
from offline_agent.retrieval import BM25Index, Passage, SearchResult


def test_all_is_sorted_and_importable() -> None:
    assert retrieval.__all__ == sorted(retrieval.__all__)
    for name in retrieval.__all__:
        assert hasattr(retrieval, name), name
    for name in (
        "Analyzer",
        "BM25Index",
        "Passage",
        "SearchResult",
        "open_corpus",
        "split_sentences",
        "ingest_paths",
    ):
        assert name in retrieval.__all__


def test_passage_is_a_frozen_dataclass_with_the_agreed_fields() -> None:
    assert dataclasses.is_dataclass(Passage)
    assert [f.name for f in dataclasses.fields(Passage)] == [
        "id",
        "doc_id",
        "title",
        "text",
        "source",
        "start",
        "end",
        "heading",
        "line",
        "page",
    ]
    p = Passage(1, "d", "t", "x", "s", 0, 1)
    try:
        p.text = "y"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("Passage must be frozen")


def test_search_result_is_a_named_tuple() -> None:
    result = BM25Index.build(["a b", "b c"]).search("b")
    ids, scores, passages = result
    assert isinstance(result, SearchResult) and result._fields == ("ids", "scores", "passages")
    assert ids.dtype.name == "int64" and scores.dtype.name == "float32" and len(passages) == 2


def test_modules_say_why_they_exist() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(retrieval.__path__):
        mod = importlib.import_module(f"offline_agent.retrieval.{module.name}")
        assert mod.__doc__ and len(mod.__doc__.strip()) > 40, module.name
