"""The scope check (agents/scope.py) on questions the sample corpus covers and on 30 it does not.

Prints, for each set, how many questions were refused, how many were decided by the vocabulary rule and how many
by the model call, and the seconds the check cost; then every refused in-scope question and every accepted
out-of-scope one. Nothing is asserted.

    python -m benchmarks.answers.scope_bench                       # default model, sample corpus and its scope
    python -m benchmarks.answers.scope_bench --model smollm2-135m-instruct
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="registry name or .gguf path [default model]")
    parser.add_argument("--scope", default=None, help="scope text or file [the sample corpus's]")
    args = parser.parse_args()

    from offline_agent.agents.scope import check_scope, read_scope
    from offline_agent.resources import data_path, sample_questions
    from offline_agent.runner import corpus_scope, load_backend, open_index

    scope = read_scope(args.scope) if args.scope else corpus_scope(None)
    index, _ = open_index(None)
    backend = load_backend(None, args.model)
    sets = {
        "sample questions (in scope)": (sample_questions(), True),
        "out-of-scope questions": (data_path("corpora/sample/out_of_scope.jsonl"), False),
    }
    print(f"scope: {scope}\nmodel: {backend.describe().get('name')}\n")
    print("| set | questions | refused | decided by rule | decided by model | wrong | s/question median | max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    mistakes = []
    for name, (path, expected) in sets.items():
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        refused = by_rule = wrong = 0
        seconds = []
        for row in rows:
            started = time.perf_counter()
            verdict = check_scope(row["question"], scope, index, backend)
            seconds.append(time.perf_counter() - started)
            refused += not verdict.in_scope
            by_rule += verdict.decided_by == "rule"
            if verdict.in_scope != expected:
                wrong += 1
                check = verdict.record.details.scope if verdict.record.details is not None else None
                mistakes.append((name, row["question"], verdict.decided_by, check.rule if check is not None else {}))
        print(
            f"| {name} | {len(rows)} | {refused} | {by_rule} | {len(rows) - by_rule} | {wrong} | "
            f"{statistics.median(seconds):.2f} | {max(seconds):.2f} |"
        )
    for name, question, how, rule in mistakes:
        print(f"\nwrong ({name}, by {how}): {question}\n  rule: {rule}")


if __name__ == "__main__":
    main()
