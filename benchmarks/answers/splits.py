"""The frozen test split of each development corpus, and the tuning split that is the rest (issue 72).

    python -m benchmarks.answers.splits test dev200 > test-ids.txt     # one question id a line
    python -m benchmarks.answers.splits tune pgdocs > tune-ids.txt

The test split is every fourth question in file order (the 4th, 8th, 12th, ...): 50 of HotpotQA dev200, 20 of the
PostgreSQL manual's 80, 21 of the sample's 87, every question type in each; and of the questions the manual and the
sample cannot answer (issue 74: `pgdocs_unanswerable`, 8 of 34; `sample_unanswerable`, 6 of 24), frozen when they
were written. It was written down in
test_split.json beside this file before any change it is to judge, and tests/test_splits.py holds the file to the
rule. Read only the tuning split's trajectories; run the test split to report, once a submission, and land a change
only where neither split's sum of right answers falls across the three corpora. The id lists feed
`three_corpora run --ids FILE` (or `--split test`, which reads them here).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.kit import HOTPOT_DEV, PG_QUESTIONS, PG_UNANSWERABLE, SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE

SPLIT_FILE = Path(__file__).with_name("test_split.json")
QUESTION_FILES = {
    "pgdocs": PG_QUESTIONS,
    "sample": SAMPLE_QUESTIONS,
    "pgdocs_unanswerable": PG_UNANSWERABLE,
    "sample_unanswerable": SAMPLE_UNANSWERABLE,
}
CORPORA = ("dev200", "pgdocs", "sample", "pgdocs_unanswerable", "sample_unanswerable")
EVERY = 4


def test_ids(corpus: str) -> list[str]:
    """The frozen test split of `corpus` (one of CORPORA), in file order."""
    if corpus not in CORPORA:
        raise SystemExit(f"unknown corpus {corpus!r}; choose from {list(CORPORA)}")
    return list(json.loads(SPLIT_FILE.read_text(encoding="utf-8"))[corpus])


def split_by_rule(ids: list[str]) -> list[str]:
    """Every fourth id of `ids` (the questions in file order): what the frozen split was made by."""
    return [question for number, question in enumerate(ids, 1) if number % EVERY == 0]


def tune_ids(corpus: str, ids: list[str]) -> list[str]:
    """The questions of `corpus` (all ids, in file order) outside its test split."""
    test = set(test_ids(corpus))
    return [question for question in ids if question not in test]


def corpus_ids(corpus: str) -> list[str]:
    """Every question id of `corpus` in file order, read from its questions file (dev200 and pgdocs under
    ../shared/data, or OFFLINE_AGENT_SHARED_DATA; the unanswerable questions in this repository)."""
    if corpus == "dev200":
        return [row["_id"] for row in json.loads(HOTPOT_DEV.read_text(encoding="utf-8"))]
    path = QUESTION_FILES[corpus]
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("split", choices=("test", "tune"), help="the frozen test split, or the tuning split (the rest)")
    parser.add_argument("corpus", choices=CORPORA)
    args = parser.parse_args()
    chosen = test_ids(args.corpus) if args.split == "test" else tune_ids(args.corpus, corpus_ids(args.corpus))
    print("\n".join(chosen))


if __name__ == "__main__":
    main()
