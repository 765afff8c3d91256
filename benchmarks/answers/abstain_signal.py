"""Whether retrieval alone tells a question the documents answer from one they do not (issue 74), with no model.

For every question of the PostgreSQL manual and of the sample corpus, answerable and not (`--unanswerable` sets,
benchmarks/answers/data/pgdocs_unanswerable.jsonl and corpora/sample/unanswerable.jsonl), a search with the whole
question, as plain retrieval makes it; the signal is the share of the question's idf the best of the top k passages
holds (its words and its title's). A signal worth an abstention rule would leave most unanswerable questions under
some threshold and almost no answerable one. Prints, per corpus and threshold, how many of each fall under it.

    python -m benchmarks.answers.abstain_signal                      # both corpora, k 5
    python -m benchmarks.answers.abstain_signal --only sample --k 3
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.kit import PG_QUESTIONS, PG_UNANSWERABLE, SAMPLE, SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
CORPORA = {"pgdocs": (PG_QUESTIONS, PG_UNANSWERABLE), "sample": (SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE)}


def questions(path: Path) -> list[str]:
    return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def coverage(index, question: str, k: int) -> float:
    """The largest share of the question's idf that one of the top `k` passages holds (its text and title)."""
    idf = index.term_idf(set(index.analyzer(question)))
    total = sum(idf.values())
    if not total:
        return 0.0
    best = 0.0
    for passage in index.search(question, k=k).passages:
        words = set(index.analyzer(f"{passage.title or ''} {passage.text}"))
        best = max(best, sum(weight for term, weight in idf.items() if term in words) / total)
    return best


def table(name: str, index, k: int) -> list[str]:
    answerable_file, unanswerable_file = CORPORA[name]
    answerable = [coverage(index, question, k) for question in questions(answerable_file)]
    unanswerable = [coverage(index, question, k) for question in questions(unanswerable_file)]
    lines = [f"{name}: {len(answerable)} answerable, {len(unanswerable)} unanswerable questions, top {k}"]
    for threshold in THRESHOLDS:
        under_a = sum(value < threshold for value in answerable)
        under_u = sum(value < threshold for value in unanswerable)
        lines.append(
            f"| share of the question's idf < {threshold} | answerable {under_a}/{len(answerable)} "
            f"({100 * under_a / len(answerable):.0f}%) | unanswerable {under_u}/{len(unanswerable)} "
            f"({100 * under_u / len(unanswerable):.0f}%) |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CORPORA), help="one corpus (default: both)")
    parser.add_argument("--k", type=int, default=5, help="passages of the question's search [5, as plain retrieval]")
    parser.add_argument("--pgdocs-index", default="pgdocs", help="the manual's saved index [pgdocs]")
    args = parser.parse_args()

    from offline_agent.retrieval.catalog import open_corpus, open_saved

    for name in [args.only] if args.only else sorted(CORPORA):
        index = open_saved(args.pgdocs_index) if name == "pgdocs" else open_corpus(SAMPLE / "docs")
        print("\n".join(table(name, index, args.k)) + "\n")


if __name__ == "__main__":
    main()
