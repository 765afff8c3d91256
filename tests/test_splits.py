"""The frozen test splits of issue 72 are what their rule says, and the tuning split is the rest."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT, need_shared_data

from benchmarks.answers import splits

SIZES = {"dev200": 50, "pgdocs": 20, "sample": 21, "pgdocs_unanswerable": 8, "sample_unanswerable": 6}
IN_REPO = ("sample", "pgdocs_unanswerable", "sample_unanswerable")


@pytest.mark.parametrize("corpus", [*IN_REPO, "dev200_shared_data", "pgdocs_shared_data"])
def test_the_frozen_split_is_every_fourth_question(corpus: str) -> None:
    name = corpus.removesuffix("_shared_data")
    if name not in IN_REPO:
        need_shared_data()
    every = splits.corpus_ids(name)
    frozen = splits.test_ids(name)
    assert frozen == splits.split_by_rule(every) and len(frozen) == SIZES[name]
    tune = splits.tune_ids(name, every)
    assert len(tune) + len(frozen) == len(every) and not set(tune) & set(frozen)


def test_every_question_type_is_in_the_sample_split() -> None:
    rows = [json.loads(line) for line in splits.SAMPLE_QUESTIONS.read_text().splitlines() if line.strip()]
    kinds = {row["type"] for row in rows}
    test = set(splits.test_ids("sample"))
    assert {row["type"] for row in rows if row["id"] in test} == kinds


def test_the_command_prints_one_id_a_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.answers.splits", "test", "sample"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert result.stdout.split() == splits.test_ids("sample")


@pytest.mark.parametrize("corpus", ["pgdocs_unanswerable", "sample_unanswerable"])
def test_the_unanswerable_questions_say_so_and_cover_each_kind(corpus: str) -> None:
    from offline_agent.eval.datasets import load_dataset

    dataset = load_dataset(splits.QUESTION_FILES[corpus])
    assert all(not record.answerable and record.answer == "" for record in dataset)
    assert len(dataset) >= {"pgdocs_unanswerable": 30, "sample_unanswerable": 20}[corpus]
    kinds = {record.type for record in dataset}
    test = set(splits.test_ids(corpus))
    assert len(kinds) >= 3 and len({record.type for record in dataset if record.id in test}) >= 2
    answerable = "pgdocs" if corpus.startswith("pgdocs") else "sample"
    if answerable == "sample":  # no id is shared with the answerable questions, so the sets can run together
        assert not {record.id for record in dataset} & set(splits.corpus_ids(answerable))
