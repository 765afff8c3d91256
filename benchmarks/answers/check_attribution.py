"""What each answer check did in evaluation runs: how often its refusal turned a wrong answer right, or right wrong.

    python -m benchmarks.answers.check_attribution RUN_DIR [RUN_DIR ...] [--dataset NAME=PATH ...]

Reads each run folder's results.jsonl (its config.json names the dataset; `--dataset` overrides where the file has
moved) and, per check (the reason a refused Final records) and per run:
- refusals, and how they ended: the refused answer against the run's final answer, by exact match (wrong -> right,
  right -> wrong, wrong -> wrong, right -> right);
- an estimate of the run's EM without the check: a question where the check refused first keeps the answer the
  check refused, as the run would have ended there (the steps before it are the same), unless a later check would
  also have refused it, which one run cannot tell: the estimate is that of the first refusal's counterfactual.
Answers the verify strategy rewrote (`checked` entries "date as written", "kind as written", "person named",
"full name", "unit as written", a name part) are attributed the same way: the written answer against the rewritten one.
EM is computed here against every accepted variant of the gold answer (`answers` in a JSONL dataset).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from offline_agent.checks import DEFAULT_REWRITES
from offline_agent.eval.datasets import load_dataset
from offline_agent.normalize import normalize_answer

# The rewrites of a Final that stands, by the name their `checked` note starts with (the name part before the checks
# writes its note otherwise: below).
REWRITES = tuple(rewrite.name for rewrite in DEFAULT_REWRITES if not rewrite.before_checks)


def golds_of(run: Path, override: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Question id -> accepted answers, from the run's dataset."""
    config = json.loads((run / "config.json").read_text())
    path = config.get("dataset", {}).get("path") if isinstance(config.get("dataset"), dict) else config.get("dataset")
    for name, moved in override.items():
        if path and Path(path).name == name:
            path = moved
    dataset = load_dataset(path)
    return {record.id: record.answers or (record.answer,) for record in dataset}


def right(answer: str | None, golds: tuple[str, ...]) -> bool:
    return answer is not None and normalize_answer(answer) in {normalize_answer(gold) for gold in golds}


def attribute(run: Path, golds: dict[str, tuple[str, ...]]) -> tuple[dict[str, dict[str, int]], int, int]:
    """Per check: counts of the four outcomes, refusals, and the questions whose answer it decided first (with the
    EM the refused answer would have had). Returns (table, questions, right answers)."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    questions = correct = 0
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        accepted = golds.get(str(row["id"]), (row["gold"],))
        final_right = right(row.get("prediction"), accepted)
        questions += 1
        correct += final_right
        firsts: set[str] = set()
        for step in row["trajectory"]["steps"]:
            details = step.get("details") or {}
            refusal = details.get("refusal")
            if refusal:
                reason = refusal["reason"]
                was_right = right(refusal.get("answer"), accepted)
                outcome = f"{'right' if was_right else 'wrong'} -> {'right' if final_right else 'wrong'}"
                counts = table[reason]
                counts["refusals"] += 1
                counts[outcome] += 1
                if reason not in firsts:  # the first refusal of this check decides its counterfactual
                    firsts.add(reason)
                    counts["questions"] += 1
                    counts["em_without"] += was_right - final_right
            for written, note in (details.get("checked") or {}).items():
                how = next((kind for kind in REWRITES if str(note).startswith(kind)), None)
                if how is None and " name: " in str(note):
                    how = "name part"
                if how is None or step.get("final") is None:
                    continue
                counts = table[f"rewrite: {how}"]
                was_right = right(written, accepted)
                counts["refusals"] += 1
                counts[f"{'right' if was_right else 'wrong'} -> {'right' if final_right else 'wrong'}"] += 1
                counts["questions"] += 1
                counts["em_without"] += was_right - final_right
    return table, questions, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--dataset", action="append", default=[], help="NAME=PATH: where a run's dataset file is now")
    args = parser.parse_args()
    override = dict(item.split("=", 1) for item in args.dataset)
    outcomes = ["wrong -> right", "right -> wrong", "wrong -> wrong", "right -> right"]
    for run in args.runs:
        if not (run / "config.json").is_file() or not (run / "results.jsonl").is_file():
            parser.error(f"not a run folder (no config.json and results.jsonl): {run}")
        table, questions, correct = attribute(run, golds_of(run, override))
        print(f"\n{run}: {questions} questions, EM {100 * correct / max(questions, 1):.1f}")
        print(f"| check | refusals | {' | '.join(outcomes)} | net | EM without (est.) |")
        print("|---|---:|" + "---:|" * (len(outcomes) + 2))
        for reason in sorted(table, key=lambda name: (-table[name]["refusals"], name)):
            counts = table[reason]
            net = counts["wrong -> right"] - counts["right -> wrong"]
            without = 100 * (correct + counts["em_without"]) / max(questions, 1)
            cells = " | ".join(str(counts[outcome]) for outcome in outcomes)
            print(f"| {reason} | {counts['refusals']} | {cells} | {net:+d} | {without:.1f} |")


if __name__ == "__main__":
    main()
