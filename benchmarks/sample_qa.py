"""Runs the ReAct agent over corpora/sample/questions.jsonl and prints exact match, F1 and seconds.

A small stand-in until `offline-agent eval` exists: one model load, one question after another, each
trajectory appended to --out (JSONL). Prints a line per question and a summary; asserts nothing.

    python benchmarks/sample_qa.py [--model NAME_OR_PATH] [--limit N] [--max-steps 8] [--out runs/sample.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from offline_agent.agents import AgentConfig
from offline_agent.cli.ask import append_trace
from offline_agent.eval import exact_match, f1_score
from offline_agent.resources import sample_questions
from offline_agent.runner import Session, load_llama_backend, open_index


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="registry name or .gguf path (default: the registry default)")
    parser.add_argument("--questions", type=Path, default=sample_questions())
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-grammar", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="append each trajectory to this JSONL file")
    args = parser.parse_args()

    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    index, corpus = open_index(None)
    started = time.monotonic()
    backend = load_llama_backend(args.model, seed=args.seed)
    load_s = time.monotonic() - started
    session = Session(backend=backend, index=index, corpus=corpus)
    config = AgentConfig(max_steps=args.max_steps, seed=args.seed, grammar=not args.no_grammar)
    described = backend.describe()
    print(
        f"model {described['name']} sha256 {described['sha256']} (loaded in {load_s:.1f} s); "
        f"{len(rows)} questions; grammar {'off' if args.no_grammar else 'on'}",
        file=sys.stderr,
    )

    ems, f1s, seconds, steps, stops = [], [], [], [], {}
    evaluated, added = [], []
    for row in rows:
        trajectory = session.ask(row["question"], config)
        em, f1 = exact_match(trajectory.answer, row["answer"]), f1_score(trajectory.answer, row["answer"])
        ems.append(em)
        f1s.append(f1)
        seconds.append(trajectory.seconds)
        steps.append(len(trajectory.steps))
        stops[trajectory.stop_reason] = stops.get(trajectory.stop_reason, 0) + 1
        for before, step in zip(trajectory.steps, trajectory.steps[1:], strict=False):
            evaluated.append(step.usage.evaluated_tokens)
            added.append(step.usage.prompt_tokens - before.usage.prompt_tokens)
        if args.out:
            append_trace(args.out, trajectory)
        print(
            f"{row['id']}\tEM {em:.0f}\tF1 {f1:.2f}\t{trajectory.seconds:6.1f} s\t{len(trajectory.steps)} steps\t"
            f"{trajectory.stop_reason}\t{trajectory.answer!r}\tgold {row['answer']!r}",
            flush=True,
        )

    n = len(rows)
    print(
        f"\nquestions {n}  exact {int(sum(ems))}/{n} (EM {100 * sum(ems) / n:.1f})  F1 {100 * sum(f1s) / n:.1f}  "
        f"seconds/question median {statistics.median(seconds):.1f} p90 {sorted(seconds)[int(0.9 * (n - 1))]:.1f}  "
        f"steps/question {statistics.mean(steps):.2f}  stop reasons {stops}"
    )
    if added:
        print(
            f"steps after the first: prompt tokens evaluated median {statistics.median(evaluated):.0f}, "
            f"prompt tokens added median {statistics.median(added):.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
