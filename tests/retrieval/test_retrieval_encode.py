"""The batch tokenizer against the analyzer it stands for: every path must give each document exactly the terms
and counts that `Analyzer.tokens` gives it, one text at a time."""

from __future__ import annotations

import string
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offline_agent.retrieval import Analyzer
from offline_agent.retrieval import encode as encode_module
from offline_agent.retrieval.encode import TermCoder

ASCII_PIECES = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=12),
    st.text(alphabet=string.ascii_lowercase, min_size=9, max_size=80),  # past the 8-byte keys and max_len
    st.sampled_from(["the", "The", "and", "running", "runs", "run", "connection", "connections", "connect"]),
    st.sampled_from(["ourselves", "Themselves", "yourselves"]),  # stopwords of more than 8 characters
    st.sampled_from([" ", "  ", "\n", "_", "-", "'", ".", ",", "\x00", "\t", "__init__", "e.g."]),
)
ascii_texts = st.lists(st.lists(ASCII_PIECES, max_size=40).map("".join), min_size=1, max_size=30)
ANALYZERS = [
    Analyzer(),
    Analyzer(stopwords=None),
    Analyzer(stemmer="english"),
    Analyzer(lowercase=False, stopwords=None, min_len=2, max_len=20),
]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _per_doc(coder: TermCoder, texts: list[str]) -> list[Counter[str]]:
    triples = coder.encode_texts(texts)
    docs: list[Counter[str]] = [Counter() for _ in texts]
    pairs = list(zip(triples.terms.tolist(), triples.docs.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs), "a (term, doc) pair came out twice"
    for (term, doc), tf in zip(pairs, triples.tf.tolist(), strict=True):
        docs[doc][coder.terms[term]] += tf
    assert coder.lengths.tolist() == [sum(c.values()) for c in docs]
    return docs


def _expected(analyzer: Analyzer, texts: list[str]) -> list[Counter[str]]:
    return [Counter(analyzer.tokens(t.replace("\x00", " "))) for t in texts]


@SETTINGS
@given(texts=ascii_texts, which=st.integers(0, len(ANALYZERS) - 1))
def test_ascii_batches_give_the_analyzers_terms(texts: list[str], which: int) -> None:
    analyzer = ANALYZERS[which]
    coder = TermCoder(analyzer)
    assert _per_doc(coder, texts) == _expected(analyzer, texts)
    # A second batch through the same coder reuses what the first one learned.
    assert _per_doc(coder, texts[::-1]) == _expected(analyzer, texts[::-1])


@SETTINGS
@given(texts=st.lists(st.text(max_size=60), min_size=1, max_size=10))
def test_any_unicode_batch_gives_the_analyzers_terms(texts: list[str]) -> None:
    analyzer = Analyzer(stopwords=None)
    assert _per_doc(TermCoder(analyzer), texts) == _expected(analyzer, texts)


def test_the_vectorised_path_is_the_one_taken_for_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    coder = TermCoder(Analyzer())
    monkeypatch.setattr(encode_module, "_BATCH_RE", None)  # the general path would fail now
    docs = _per_doc(coder, ["Alpha beta42 gamma", "extraordinarily long-winded tokenization", "x"])
    assert docs[1] == Counter({"extraordinarily": 1, "long": 1, "winded": 1, "tokenization": 1})


def test_a_hash_collision_between_long_tokens_falls_back_to_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With the multiplier at zero a long token's hash is its last 8-byte word, so these two collide.
    monkeypatch.setattr(encode_module, "_MIX", np.uint64(0))
    texts = ["aaaaaaaasuffixes zzzzzzzzsuffixes", "zzzzzzzzsuffixes"]
    analyzer = Analyzer(stopwords=None)
    coder = TermCoder(analyzer)
    calls = []
    original = coder._encode_ascii
    monkeypatch.setattr(coder, "_encode_ascii", lambda *a: calls.append(original(*a)) or calls[-1])
    assert _per_doc(coder, texts) == _expected(analyzer, texts)
    assert calls == [None]  # the collision was seen, and the regular expression did the batch


def test_short_keys_decode_to_their_tokens() -> None:
    coder = TermCoder(Analyzer(lowercase=False, stopwords=None))
    words = ["a", "Z", "09", "abcdefgh", "ZZZZZZZZ", "a1B2c3D4"]
    docs = _per_doc(coder, [" ".join(words)])
    assert docs[0] == Counter(words)


def test_tokens_that_stem_to_one_term_are_counted_together() -> None:
    analyzer = Analyzer(stemmer="english")
    texts = ["runs run running connections connect connected", "connection runs"]
    docs = _per_doc(TermCoder(analyzer), texts)
    assert docs == _expected(analyzer, texts)
    assert docs[0]["run"] == 3 and docs[0]["connect"] == 3


def test_long_stopwords_are_dropped() -> None:
    analyzer = Analyzer()
    texts = ["We did it ourselves, they did it themselves", "Yourselves and extraordinary people"]
    docs = _per_doc(TermCoder(analyzer), texts)
    assert docs == _expected(analyzer, texts)
    assert docs[1] == Counter({"extraordinary": 1, "people": 1})


mixed_texts = st.lists(
    st.one_of(
        st.lists(ASCII_PIECES, max_size=20).map("".join),
        st.lists(st.one_of(ASCII_PIECES, st.sampled_from(["café", "Ünïcode", "“quoted”", "ﬁne", "İstanbul"])),
                 max_size=20).map("".join),
    ),
    min_size=1,
    max_size=20,
)  # fmt: skip


@SETTINGS
@given(texts=mixed_texts, which=st.integers(0, len(ANALYZERS) - 1))
def test_mixed_batches_give_the_analyzers_terms(texts: list[str], which: int) -> None:
    """A batch with some non-ASCII documents: the ASCII ones take the fast path, the others the general one."""
    analyzer = ANALYZERS[which]
    assert _per_doc(TermCoder(analyzer), texts) == _expected(analyzer, texts)


def test_a_mostly_ascii_batch_sends_its_ascii_documents_down_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    analyzer = Analyzer(stopwords=None)
    coder = TermCoder(analyzer)
    sizes = []
    original = coder._encode_ascii
    monkeypatch.setattr(coder, "_encode_ascii", lambda joined, n: sizes.append(n) or original(joined, n))
    texts = ["plain words", "a café in Köln", "more plain words", "x"]
    assert _per_doc(coder, texts) == _expected(analyzer, texts)
    assert sizes == [3]
