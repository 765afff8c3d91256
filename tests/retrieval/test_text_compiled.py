"""The compiled text kernel (`_text.c`) gives exactly what the Python gives: the same sentence spans and chunks as
sentences.py, the same spacing as html_content.collapse_spaces, on random texts of every character the rules look
at and on real pages; and all of it works without the kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_retrieval_kernel import _can_compile

from offline_agent.retrieval import kernel, sentences
from offline_agent.retrieval.ingest import walk
from offline_agent.retrieval.readers import html_content, read_document_file
from offline_agent.retrieval.readers.base import Fields
from offline_agent.retrieval.sentences import _ABBREVIATIONS

COMPILED = sentences._COMPILED
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="the text kernel is not built (hatch_build.py)")
ROOT = Path(__file__).resolve().parents[2]
PG_MANUAL = Path("/usr/share/doc/postgresql-doc-15/html")

# Every character a rule looks at: end marks (Latin and CJK), closing and opening quotes, spaces of every kind
# (Unicode ones too: U+0085, U+00A0, U+2028, U+3000), line breaks and list and heading marks, digits (an Arabic-Indic
# one too), abbreviations' letters, and letters whose lowercase is not one ASCII letter (Kelvin sign, dotted I).
ALPHABET = list("ab AZ.!?…。！？\"'”’»)]([“‘\n\n\t  #-*+•0123456789eigDrMJfKco\u212aİßΩω\xa0\x85\u2028\u3000\u0663")
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=200)


def test_the_splitter_is_built_under_ci_where_it_can_be() -> None:
    if COMPILED is None:
        if os.environ.get("CI") == "true" and _can_compile():
            pytest.fail("CI=true, a compiler and Python.h are here, but _text.c is not built (hatch_build.py)")
        pytest.skip("the text kernel is not built: the Python does its work")


@needs_compiled
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
@example("Dr. Smith met J. R. R. Tolkien. He left.")
@example("20.3. Connections\n\n1. Install it. Then run it.\n  2) Stop.\n####### Not a heading\n## One")
@example("e.g. x. K\u212a. İ. Ab.\nc")  # words a str.lower() turns into other lengths or letters
@example("。」 x。。y! 。\n. ... .. a…")
def test_sentences_equal_the_python_ones(text: str) -> None:
    assert COMPILED.split_sentences(text, _ABBREVIATIONS) == sentences._split_sentences(text)


@needs_compiled
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.integers(1, 12), st.integers(0, 11), st.integers(1, 40))
@example("a\n\na a a\n\na a", 4, 3, 48)
@example("x" * 100 + " yy. Zz" * 3, 2, 1, 7)  # a word longer than max_chars: cut into fixed runs
def test_chunks_equal_the_python_ones(text: str, size: int, overlap: int, max_chars: int) -> None:
    overlap = min(overlap, size - 1)
    python = sentences._chunk_spans(text, size, overlap, max_chars)
    assert COMPILED.chunk_spans(text, size, overlap, max_chars, _ABBREVIATIONS) == python
    assert sentences.chunk_spans(text, size, overlap, max_chars) == python


@needs_compiled
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab \t\r\f\v\xa0\n\n\n  \u2003\u2028\x85\x1c\ue000\ue001é")), max_size=60))
@example(" \t\n \n\xa0\n\n  a  \u2003 \n b\r\n\n\n\u2028")
def test_spacing_equals_the_python_one(text: str) -> None:
    assert html_content.collapse_spaces(text) == html_content._collapse_spaces(text)


def _page_texts(folder: Path, limit: int | None = None) -> list[str]:
    entries, _ = walk([folder])
    out: list[str] = []
    for entry in entries[:limit]:
        docs, _ = read_document_file(entry.path, entry.path.read_bytes(), entry.source, Fields())
        out += [doc.text for doc in docs]
    return out


@needs_compiled
@pytest.mark.parametrize(
    "folder",
    [
        ROOT / "corpora" / "sample" / "docs",
        ROOT / "tests" / "retrieval" / "html_pages",
        pytest.param(
            PG_MANUAL,
            marks=pytest.mark.skipif(not PG_MANUAL.is_dir(), reason="postgresql-doc-15 is not installed"),
        ),
    ],
    ids=["sample", "html_pages", "pg_manual"],
)
def test_real_pages_split_chunk_and_space_alike(folder: Path) -> None:
    for path in sorted(folder.glob("*.html"))[:400]:
        html = path.read_text(encoding="utf-8", errors="replace")
        assert COMPILED.collapse_spaces(html) == html_content._collapse_spaces(html)
    pages = _page_texts(folder)
    assert pages
    for text in pages:
        assert COMPILED.split_sentences(text, _ABBREVIATIONS) == sentences._split_sentences(text)
        for size, overlap in ((200, 40), (30, 5)):
            python = sentences._chunk_spans(text, size, overlap, size * 12)
            assert COMPILED.chunk_spans(text, size, overlap, size * 12, _ABBREVIATIONS) == python


@needs_compiled
def test_bad_arguments_are_errors_not_crashes() -> None:
    with pytest.raises(TypeError, match="a str and a set"):
        COMPILED.split_sentences(b"bytes.", _ABBREVIATIONS)
    with pytest.raises(TypeError, match="expected a str"):
        COMPILED.collapse_spaces(None)
    with pytest.raises(TypeError, match="a str and a set"):
        COMPILED.split_sentences("Text.", ["dr"])
    with pytest.raises(ValueError, match="overlap < size"):
        COMPILED.chunk_spans("Text.", 10, 10, 120, _ABBREVIATIONS)
    with pytest.raises(ValueError, match="max_chars >= 1"):
        COMPILED.chunk_spans("Text.", 10, 2, 0, _ABBREVIATIONS)
    with pytest.raises(ValueError, match="max_chars >= 0"):
        sentences.chunk_spans("Text.", 10, 2, -1)


def test_splitting_works_without_the_compiled_module() -> None:
    code = (
        "from offline_agent.retrieval import sentences as s\n"
        "from offline_agent.retrieval.readers.html_content import _COMPILED, collapse_spaces\n"
        "t = 'Dr. Smith left. He came back!\\n\\n- one\\n- two'\n"
        "print(s._COMPILED is None, [t[a:b] for a, b in s.split_sentences(t)], s.chunk_spans(t, 3, 1))\n"
        "print(_COMPILED is None, repr(collapse_spaces(' a \\t b \\n\\n\\n c ')))\n"
    )
    env = {**os.environ, "OFFLINE_AGENT_NO_KERNEL": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    assert out.stdout.splitlines() == [
        "True ['Dr. Smith left.', 'He came back!', '- one', '- two'] [(0, 15), (16, 29), (31, 36), (37, 42)]",
        "True 'a b\\n\\nc'",
    ]


@needs_compiled
def test_compiled_ignores_a_module_turned_off_or_built_from_other_source(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kernel.compiled("_text", 1) is COMPILED
    monkeypatch.setenv("OFFLINE_AGENT_NO_KERNEL", "1")
    assert kernel.compiled("_text", 1) is None
    monkeypatch.delenv("OFFLINE_AGENT_NO_KERNEL")
    assert kernel.compiled("_text", 2) is None
    monkeypatch.setattr(COMPILED, "SOURCE_SHA256", "0" * 64)
    assert kernel.compiled("_text", 1) is None
    assert kernel.compiled("_no_such_module", 1) is None
