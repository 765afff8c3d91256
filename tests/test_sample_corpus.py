"""Sanity checks for the bundled sample corpus (corpora/sample)."""

import json
import re
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "corpora" / "sample"
DOCS = SAMPLE / "docs"
QUESTIONS = SAMPLE / "questions.jsonl"

YES_NO = {"yes", "no"}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _load_passages() -> dict[str, str]:
    """Map each passage title to its full text (title line included)."""
    passages: dict[str, str] = {}
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        first = text.splitlines()[0] if text else ""
        if first.startswith("# "):
            passages.setdefault(first[2:].strip(), text)
    return passages


def _load_questions() -> list[dict]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def passages() -> dict[str, str]:
    return _load_passages()


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return _load_questions()


def test_enough_passage_files():
    assert len(list(DOCS.glob("*.md"))) >= 150


def test_passage_format():
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        assert lines, f"{path.name} is empty"
        assert re.match(r"^# \S", lines[0]), f"{path.name}: first line must be '# Title'"
        body = "\n".join(lines[1:]).strip()
        assert body, f"{path.name}: empty body"
        assert not body.startswith("#"), f"{path.name}: body must be plain text"


def test_titles_unique():
    titles = []
    for path in sorted(DOCS.glob("*.md")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        titles.append(first[2:].strip())
    duplicates = sorted({t for t in titles if titles.count(t) > 1})
    assert not duplicates, f"duplicate titles: {duplicates}"


def test_questions_parse_and_ids_unique(questions):
    assert len(questions) >= 40
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids)), "question ids must be unique"
    for q in questions:
        assert isinstance(q.get("question"), str) and q["question"].strip(), q
        assert isinstance(q.get("answer"), str) and q["answer"].strip(), q
        assert isinstance(q.get("supporting_titles"), list) and q["supporting_titles"], q
        assert q.get("type") in {"bridge", "comparison"}, q


def test_enough_two_hop_questions(questions):
    two_hop = [q for q in questions if len(set(q["supporting_titles"])) >= 2]
    assert len(two_hop) >= 30


def test_yes_no_answers_are_rare(questions):
    assert sum(_norm(q["answer"]) in YES_NO for q in questions) <= 3


def test_supporting_titles_exist(questions, passages):
    for q in questions:
        for title in q["supporting_titles"]:
            assert title in passages, f"{q['id']}: unknown supporting title {title!r}"


def test_answers_appear_in_supporting_passages(questions, passages):
    for q in questions:
        answer = _norm(q["answer"])
        if answer in YES_NO:
            continue
        texts = [_norm(passages[t]) for t in q["supporting_titles"] if t in passages]
        assert any(answer in text for text in texts), (
            f"{q['id']}: answer {q['answer']!r} not found in {q['supporting_titles']}"
        )
