"""The analyzer: tokenization rules, stopwords, round trip of its saved form (hypothesis where open)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offline_agent.retrieval import Analyzer


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", []),
        ("   \n\t", []),
        ("Hello, World!", ["hello", "world"]),
        ("snake_case and CamelCase", ["snake", "case", "camelcase"]),
        ("Café crème brûlée", ["café", "crème", "brûlée"]),
        ("Ｆｕｌｌｗｉｄｔｈ ﬁle", ["fullwidth", "file"]),  # NFKC
        ("Москва и Санкт-Петербург", ["москва", "и", "санкт", "петербург"]),
        ("3.14 is pi; 1,047 km", ["3", "14", "pi", "1", "047", "km"]),
        ("The cat is on the mat", ["cat", "mat"]),
    ],
)
def test_tokens(text: str, tokens: list[str]) -> None:
    assert Analyzer().tokens(text) == tokens


def test_without_stopwords_and_length_limits() -> None:
    analyzer = Analyzer(stopwords=None, min_len=2, max_len=5)
    assert analyzer.tokens("a to the castle x") == ["to", "the"]


@pytest.mark.parametrize(
    "analyzer",
    [
        Analyzer(),
        Analyzer(stopwords=None, lowercase=False, normalize=None),
        Analyzer(stopwords=frozenset({"x"})),
    ],
)
def test_saved_form_round_trips(analyzer: Analyzer) -> None:
    again = Analyzer.from_dict(analyzer.to_dict())
    assert again == analyzer
    assert again.tokens("The X of Y and Ｚ") == analyzer.tokens("The X of Y and Ｚ")


@given(st.text(max_size=200))
def test_tokens_are_lowercase_nonempty_and_spans_point_at_them(text: str) -> None:
    analyzer = Analyzer(stopwords=None)
    tokens = analyzer.tokens(text)
    assert all(t and t == t.lower() for t in tokens)
    for start, end, term in analyzer.spans(text):
        assert 0 <= start < end <= len(text)
        assert term in analyzer.tokens(text[start:end])
