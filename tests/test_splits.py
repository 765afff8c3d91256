"""The frozen test splits of issue 72 are what their rule says, and the tuning split is the rest."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT, need_shared_data

from benchmarks.answers import splits

SIZES = {"dev200": 50, "pgdocs": 20, "sample": 21}


@pytest.mark.parametrize("corpus", ["sample", "dev200_shared_data", "pgdocs_shared_data"])
def test_the_frozen_split_is_every_fourth_question(corpus: str) -> None:
    name = corpus.removesuffix("_shared_data")
    if name != "sample":
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
