"""Whether retrieval alone tells a question the documents answer from one they do not (issue 74), with no model.

For every question of the PostgreSQL manual and of the sample corpus, answerable and not (`--unanswerable` sets,
benchmarks/answers/data/pgdocs_unanswerable.jsonl and corpora/sample/unanswerable.jsonl), a search with the whole
question, as plain retrieval makes it. Two signals, each the share of the question's idf that something misses:
- `best` (k 5): what the best single passage of the top k misses (its words and its title's);
- `chain` (k 10): what the best chain of the top k misses, a chain being one passage, or two where the first's text
  names the second's title (a bridge: the author's page names the city, the city's page holds the river). It asks
  whether the question's constraints are all held by passages that are linked, not merely by some passage.
A signal worth an abstention rule would put most unanswerable questions over some threshold and almost no answerable
one. Prints, per corpus and threshold, how many of each miss more than it.

    python -m benchmarks.answers.abstain_signal                      # both corpora, both signals
    python -m benchmarks.answers.abstain_signal --only sample --signal chain --k 10
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.kit import PG_QUESTIONS, PG_UNANSWERABLE, SAMPLE, SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE

THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
CORPORA = {"pgdocs": (PG_QUESTIONS, PG_UNANSWERABLE), "sample": (SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE)}
DEFAULT_K = {"best": 5, "chain": 10}


def questions(path: Path) -> list[str]:
    return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def missed(index, question: str, k: int, chains: bool) -> float:
    """The smallest share of the question's idf that one of the top `k` passages misses (its text and title) or,
    with `chains`, that a passage and a passage whose title its text names miss together."""
    idf = index.term_idf(set(index.analyzer(question)))
    total = sum(idf.values())
    if not total:
        return 1.0
    passages = index.search(question, k=k).passages
    words = [set(index.analyzer(passage.indexed_text)) for passage in passages]
    least = 1.0
    for first, passage in enumerate(passages):
        held = [words[first]]
        if chains:
            text = passage.text.casefold()
            held += [
                words[first] | words[second]
                for second, other in enumerate(passages)
                if other.title and other.title != passage.title and other.title.casefold() in text
            ]
        for terms in held:
            least = min(least, sum(weight for term, weight in idf.items() if term not in terms) / total)
    return least


def table(name: str, index, signal: str, k: int) -> list[str]:
    answerable_file, unanswerable_file = CORPORA[name]
    chains = signal == "chain"
    answerable = [missed(index, question, k, chains) for question in questions(answerable_file)]
    unanswerable = [missed(index, question, k, chains) for question in questions(unanswerable_file)]
    counts = f"{len(answerable)} answerable, {len(unanswerable)} unanswerable questions"
    lines = [f"{name}, signal {signal}: {counts}, top {k}"]
    for threshold in THRESHOLDS:
        over_a = sum(value > threshold for value in answerable)
        over_u = sum(value > threshold for value in unanswerable)
        lines.append(
            f"| misses > {threshold} of the question's idf | answerable {over_a}/{len(answerable)} "
            f"({100 * over_a / len(answerable):.0f}%) | unanswerable {over_u}/{len(unanswerable)} "
            f"({100 * over_u / len(unanswerable):.0f}%) |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CORPORA), help="one corpus (default: both)")
    parser.add_argument("--signal", choices=sorted(DEFAULT_K), help="one signal (default: both)")
    parser.add_argument("--k", type=int, default=None, help="passages of the question's search [best 5, chain 10]")
    parser.add_argument("--pgdocs-index", default="pgdocs", help="the manual's saved index [pgdocs]")
    args = parser.parse_args()

    from offline_agent.retrieval.catalog import open_corpus, open_saved

    for name in [args.only] if args.only else sorted(CORPORA):
        index = open_saved(args.pgdocs_index) if name == "pgdocs" else open_corpus(SAMPLE / "docs")
        for signal in [args.signal] if args.signal else sorted(DEFAULT_K):
            print("\n".join(table(name, index, signal, args.k or DEFAULT_K[signal])) + "\n")


if __name__ == "__main__":
    main()
