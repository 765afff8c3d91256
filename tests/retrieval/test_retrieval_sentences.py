"""Sentence spans and chunks: round trips over odd inputs first (empty, whitespace), then real text."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from offline_agent.retrieval import chunk_spans, split_sentences

ODD = ["", " ", "\n\n\n", ".", "...", "!?", "a", "ß", "。", "x.\n\ny", "Mr.", "e.g. x"]


def _covers_all_non_space(text: str, spans: list[tuple[int, int]]) -> None:
    pos = 0
    for start, end in spans:
        assert pos <= start < end <= len(text)
        assert not text[pos:start].strip()  # only whitespace between spans
        assert text[start] == text[start].strip() and text[end - 1] == text[end - 1].strip()
        pos = end
    assert not text[pos:].strip()


@pytest.mark.parametrize("text", ODD)
def test_odd_inputs_round_trip(text: str) -> None:
    _covers_all_non_space(text, split_sentences(text))


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t…。\"'()Dr")), max_size=300))
def test_spans_cover_every_non_space_character_once(text: str) -> None:
    _covers_all_non_space(text, split_sentences(text))


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Dr. Smith met J. R. R. Tolkien. He left.", ["Dr. Smith met J. R. R. Tolkien.", "He left."]),
        ("It costs 3.50 dollars, e.g. a lot. Yes.", ["It costs 3.50 dollars, e.g. a lot.", "Yes."]),
        ('He said "Stop." Then he ran.', ['He said "Stop."', "Then he ran."]),
        ("lower case. continues here", ["lower case. continues here"]),
        (
            "Heading\n\nParagraph one.\n- item one\n- item two",
            ["Heading", "Paragraph one.", "- item one", "- item two"],
        ),
        ("東京は大きい。大阪も大きい。", ["東京は大きい。", "大阪も大きい。"]),
        # a number that starts a line is a numbered heading's or list item's, not a sentence of its own
        (
            "20.3. Connections and Authentication\n\nThe server listens. It waits.",
            ["20.3. Connections and Authentication", "The server listens.", "It waits."],
        ),
        ("F.3. Auth Delay\n\nIt pauses.", ["F.3. Auth Delay", "It pauses."]),
        (
            "Steps:\n1. Install it. Then run it.\n  2. Stop it.",
            ["Steps:", "1. Install it.", "Then run it.", "2. Stop it."],
        ),
        ("1. FC Köln won. It rose in 1999. Then it fell.", ["1. FC Köln won.", "It rose in 1999.", "Then it fell."]),
    ],
)
def test_sentences(text: str, sentences: list[str]) -> None:
    assert [text[s:e] for s, e in split_sentences(text)] == sentences


@given(
    st.text(alphabet=st.sampled_from(list("abc .\n")), max_size=400),
    st.integers(1, 30),
    st.integers(0, 29),
)
@example(text="a\n\na a a\n\na a", size=4, overlap=3)  # stepping back 3 words left no room for the next 2
def test_chunks_cover_the_text_in_order_within_the_size(text: str, size: int, overlap: int) -> None:
    if overlap >= size:
        overlap = size - 1
    chunks = chunk_spans(text, size, overlap)
    words = [m.span() for m in re.finditer(r"\S+", text)]
    covered = {w for w in words for s, e in chunks if s <= w[0] and w[1] <= e}
    # A word longer than the character bound (12 per word of size) is cut anywhere: its pieces cover it instead.
    long_words = {w for w in words if w[1] - w[0] > size * 12}
    assert covered | long_words == set(words)
    for ws, we in long_words:
        assert all(any(s <= c < e for s, e in chunks) for c in range(ws, we))
    for (s1, e1), (s2, e2) in zip(chunks, chunks[1:], strict=False):
        assert s1 < s2 and e1 < e2
    for s, e in chunks:
        assert len(text[s:e].split()) <= size or len(text[s:e]) <= size * 12


def test_chunk_size_validation() -> None:
    with pytest.raises(ValueError, match="overlap < size"):
        chunk_spans("text", size=10, overlap=10)


# The splitter as it was before it became linear (it searched for the word before each full stop from the start of
# the text, and tried every mark of a row of dots): the reference the linear one must agree with everywhere.
_OLD_END_RE = re.compile(r"""(?:[.!?…]+|[。！？]+)["'”’»)\]]*(?=\s|$)|[。！？]+(?=\S)""")
_OLD_BREAK_RE = re.compile(r"\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*+•]\s|\d+[.)]\s|#{1,6}\s))")


def _old_split_sentences(text: str) -> list[tuple[int, int]]:
    from offline_agent.retrieval.sentences import _ABBREVIATIONS, spans_between

    def is_end(start: int, end: int) -> bool:
        if text[start] in "。！？":
            return True
        nxt = re.compile(r"\s*(\S)").match(text, end)
        if nxt is None:
            return True
        if nxt.group(1).islower():
            return False
        if text[start] == ".":
            word = re.compile(r"(\S+)$").search(text, 0, start)
            if word is not None:
                w = word.group(1).lstrip("(\"'“‘").lower()
                if w in _ABBREVIATIONS or (len(w) == 1 and w.isalpha()):
                    return False
        return True

    cuts = {m.end() for m in _OLD_BREAK_RE.finditer(text)}
    cuts |= {m.end() for m in _OLD_END_RE.finditer(text) if is_end(m.start(), m.end())}
    return spans_between(text, cuts)


_ALPHABET = list("ab AZ.!?…。！？\n\t\"'“‘”’»)]([-*#1Dr") + ["e.g.", "Mr", "etc", "\u00a0", "\u2003", "..."]


@given(st.lists(st.sampled_from(_ALPHABET), max_size=120).map("".join))
@example("x\n. Y")  # a full stop after a line break: the word before is the one before the break
@example("(" * 40 + "a. B")  # a word longer than the first look back
@example("a" + "." * 300 + "x b. C")  # a row of dots not followed by a space
def test_linear_splitter_agrees_with_the_old_one(text: str) -> None:
    assert split_sentences(text) == _old_split_sentences(text)


@given(
    st.lists(st.sampled_from(_ALPHABET), max_size=150).map("".join),
    st.integers(1, 40),
    st.integers(0, 39),
    st.integers(1, 60),
)
@example("東京。大阪 x", 2, 0, 100)  # a sentence end inside a run of non-spaces: two words, not one
def test_a_text_that_fits_is_chunked_as_its_sentences_would_be(text: str, size: int, overlap: int, chars: int) -> None:
    from offline_agent.retrieval.sentences import _chunk_units

    overlap = min(overlap, size - 1)
    assert chunk_spans(text, size, overlap, chars) == _chunk_units(text, size, overlap, chars)
