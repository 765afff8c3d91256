"""Reading QA datasets: HotpotQA JSON and JSONL, and every bad input refused with a one-line DatasetError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT, need_shared_data

from offline_agent.errors import ConfigError, OfflineAgentError
from offline_agent.eval.corpora import open_eval_corpus, resolve_setting
from offline_agent.eval.datasets import DatasetError, load_dataset

HOTPOT = [
    {
        "_id": "h1",
        "question": "Which river runs through the town where Edda Morlin was born?",
        "answer": "Lunne",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Edda Morlin", 0], ["Kessa", 1], ["Kessa", 0]],
        "context": [
            ["Edda Morlin", ["Edda Morlin was a painter born in Kessa.", " She painted storms."]],
            ["Kessa", ["Kessa is a fishing village.", " The Lunne river runs through Kessa."]],
            ["Orvik Bridge", ["The Orvik Bridge crosses the Lunne."]],
        ],
    },
    {
        "_id": "h2",
        "question": "Which opened first, the Orvik Bridge or the Selma Tunnel?",
        "answer": "Selma Tunnel",
        "type": "comparison",
        "level": "medium",
        "supporting_facts": [["Orvik Bridge", 0], ["Selma Tunnel", 0]],
        "context": [
            ["Orvik Bridge", ["The Orvik Bridge crosses the Lunne."]],
            ["Selma Tunnel", ["The Selma Tunnel opened in 1908."]],
        ],
    },
]


def write_hotpot(path: Path, records=HOTPOT) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_hotpot_json(tmp_path: Path) -> None:
    dataset = load_dataset(write_hotpot(tmp_path / "hotpot.json"))
    assert dataset.format == "hotpotqa" and len(dataset) == 2 and dataset.has_context
    first = dataset.records[0]
    assert (first.id, first.answer, first.type, first.level) == ("h1", "Lunne", "bridge", "easy")
    assert first.supporting_titles == ("Edda Morlin", "Kessa")  # de-duplicated, in order
    assert first.context[0].text == "Edda Morlin was a painter born in Kessa. She painted storms."
    # pooled: distinct paragraphs of the whole file (the Orvik Bridge paragraph appears twice)
    assert [p.title for p in dataset.paragraphs()] == ["Edda Morlin", "Kessa", "Orvik Bridge", "Selma Tunnel"]
    assert len(dataset.sha256) == 64


def test_jsonl_sample_questions() -> None:
    dataset = load_dataset(ROOT / "corpora" / "sample" / "questions.jsonl", limit=3)
    assert dataset.format == "jsonl" and len(dataset) == 3 and not dataset.has_context
    assert dataset.records[0].supporting_titles and dataset.records[0].type == "bridge"


def test_numbers_as_answers_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": 1, "question": "How many?", "answer": 18}\n\n', encoding="utf-8")
    record = load_dataset(path).records[0]
    assert (record.id, record.answer, record.supporting_titles) == ("1", "18", ())


def test_answer_variants_are_read_with_the_answer_first(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "a", "question": "How many slots?", "answer": "three connections", "answers": ["three", "3"]},
        {"id": "b", "question": "Which mode?", "answer": "0777", "answers": ["0777"]},
        {"id": "c", "question": "Who?", "answer": "Ada"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records = load_dataset(path).records
    assert [record.answers for record in records] == [("three connections", "three", "3"), ("0777",), ("Ada",)]


def test_an_answer_scores_against_its_best_variant() -> None:
    from offline_agent.eval.datasets import QARecord
    from offline_agent.eval.scoring import result_row
    from offline_agent.steps import Trajectory

    record = QARecord(id="a", question="q", answer="three connections", answers=("three connections", "three"))
    scored = {
        answer: (row["em"], row["f1"])
        for answer in ("three", "Three connections", "three slots", "four")
        for row in [result_row(record, Trajectory(question="q", steps=[], answer=answer, stop_reason="final"))]
    }
    assert scored["three"] == (1.0, 1.0) and scored["Three connections"] == (1.0, 1.0)
    assert scored["three slots"][0] == 0.0 and scored["three slots"][1] == pytest.approx(2 / 3)
    assert scored["four"] == (0.0, 0.0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ("not json at all\n", "line 1 is not valid JSON"),
        ('[{"_id": "a", "question": "q", "answer": "x"},', "not valid JSON (line 1"),
        ('{"id": "a", "question": "q"}\n', "line 1 (id 'a') has no answer"),
        ('{"id": "a", "answer": "x"}\n', "line 1 (id 'a') has no question"),
        ('{"id": "a", "question": "  ", "answer": "x"}\n', "has no question"),
        ('{"question": "q", "answer": "x"}\n', "line 1 has no id"),
        (
            '{"id": "a", "question": "q", "answer": "x"}\n{"id": "a", "question": "r", "answer": "y"}\n',
            "duplicate id 'a' (line 1 and line 2)",
        ),
        ("[1, 2]", "record 1 is not a JSON object"),
        ('{"id": "a", "question": "q", "answer": "x", "supporting_titles": "A"}\n', "must be a list of strings"),
        ('[{"_id": "a", "question": "q", "answer": "x", "context": [["T"]]}]', "context must be a list"),
        ('{"id": "a", "question": "q", "answer": "x", "answers": "x"}\n', "answers must be a list of non-empty"),
        ('{"id": "a", "question": "q", "answer": "x", "answers": ["x", ""]}\n', "answers must be a list of non-empty"),
    ],
)
def test_bad_datasets(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(caught.value, OfflineAgentError)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset not found"):
        load_dataset(tmp_path / "nope.json")
    with pytest.raises(DatasetError, match="is a folder"):
        load_dataset(tmp_path)
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_dataset(tmp_path / "bin.json")


def test_settings(tmp_path: Path) -> None:
    hotpot = load_dataset(write_hotpot(tmp_path / "h.json"))
    plain = load_dataset(write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "q", "answer": "x"}]))
    assert resolve_setting(None, hotpot, None) == "distractor"
    assert resolve_setting(None, hotpot, tmp_path) == "pooled"
    assert resolve_setting(None, plain, tmp_path) == "pooled"
    with pytest.raises(ConfigError, match="--pool goes with --setting pooled"):
        resolve_setting("distractor", hotpot, tmp_path)
    with pytest.raises(ConfigError, match="needs each question's context"):
        resolve_setting("distractor", plain, None)
    with pytest.raises(ConfigError, match="give the corpus with --pool"):
        resolve_setting(None, plain, None)


def test_distractor_and_pooled_indexes(tmp_path: Path) -> None:
    dataset = load_dataset(write_hotpot(tmp_path / "h.json"))
    distractor = open_eval_corpus("distractor", dataset, None)
    own = distractor.index_for(dataset.records[1])
    assert len(own) == 2 and own.search("tunnel", k=1).passages[0].title == "Selma Tunnel"
    pooled = open_eval_corpus("pooled", dataset, None)
    assert pooled.passages == 4 and pooled.index_for(dataset.records[0]) is pooled.index_for(dataset.records[1])
    assert pooled.sha256 == open_eval_corpus("pooled", dataset, None).sha256 != distractor.sha256


@pytest.mark.shared_data
def test_shared_data_hotpot_dev200_first_records() -> None:
    path = need_shared_data("hotpotqa", "hotpot_dev200_distractor.json")
    dataset = load_dataset(path, limit=5)
    assert dataset.format == "hotpotqa" and len(dataset) == 5 and dataset.has_context
    for record in dataset.records:
        assert record.question and record.answer and record.type in ("bridge", "comparison")
        assert record.level in ("easy", "medium", "hard")
        assert len(record.supporting_titles) >= 2
        titles = {paragraph.title for paragraph in record.context}
        assert set(record.supporting_titles) <= titles and len(record.context) >= 2
