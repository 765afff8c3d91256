"""The ReAct agent end to end, old decoding path against new, on real questions with the default model.

Runs the first N questions of HotpotQA dev (pooled over the file's paragraphs; ../shared/data) and of
corpora/sample/questions.jsonl, once with llama-cpp-python's grammar= sampler (`--path old`) and once with the
llguidance engine and jump-forward (`--path new`, the default of `ask` and `eval`). Prints, per dataset and
path: seconds per question (median, p90), EM, prompt tokens evaluated against prompt tokens added per step
(after the first step of a question), and generated tokens per step. Asserts nothing.

    python -m benchmarks.speed.agent_bench [--model NAME] [--limit 20] [--path old,new] [--hotpot PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.kit import HOTPOT_DEV
from offline_agent.agents import RunConfig
from offline_agent.eval import exact_match
from offline_agent.eval.corpora import open_eval_corpus
from offline_agent.eval.datasets import load_dataset
from offline_agent.resources import sample_questions
from offline_agent.runner import Session, load_backend, open_index

HOTPOT = HOTPOT_DEV
ENGINES = {"old": ("llama.cpp", False), "new": ("llguidance", True), "check": ("llama.cpp-check", False)}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def run(name: str, records: list, index, corpus: str, backend, limit: int) -> dict[str, object]:
    session = Session(backend=backend, index=index, corpus=corpus)
    seconds, ems, evaluated, added, generated = [], [], [], [], []
    for record in records[:limit]:
        trajectory = session.ask(record.question, RunConfig())
        seconds.append(trajectory.seconds)
        ems.append(exact_match(trajectory.answer, record.answer))
        for before, step in zip(trajectory.steps, trajectory.steps[1:], strict=False):
            evaluated.append(step.usage.evaluated_tokens)
            added.append(step.usage.prompt_tokens - before.usage.prompt_tokens)
        generated += [step.usage.generated_tokens for step in trajectory.steps]
        print(
            f"  {name} {record.id}: {trajectory.seconds:.1f} s {trajectory.stop_reason} {trajectory.answer!r}",
            file=sys.stderr,
            flush=True,
        )
    return {
        "questions": len(seconds),
        "s/q median": round(statistics.median(seconds), 1),
        "s/q p90": round(percentile(seconds, 0.9), 1),
        "EM": round(100 * sum(ems) / len(ems), 1),
        "evaluated/step": round(statistics.median(evaluated), 1) if evaluated else None,
        "added/step": round(statistics.median(added), 1) if added else None,
        "max extra": max((e - a for e, a in zip(evaluated, added, strict=True)), default=None),
        "generated/step": round(statistics.mean(generated), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument(
        "--path", default="old,new", help="old (grammar=), new (llguidance + jump-forward), check (llama.cpp-check)"
    )
    parser.add_argument("--hotpot", type=Path, default=HOTPOT)
    parser.add_argument("--datasets", default="hotpot,sample")
    args = parser.parse_args()

    datasets = {}
    if "hotpot" in args.datasets:
        if not args.hotpot.is_file():
            print(f"error: {args.hotpot} not found (../shared/data)", file=sys.stderr)
            return 1
        hotpot = load_dataset(args.hotpot)
        corpus = open_eval_corpus("pooled", hotpot, None)
        datasets["hotpot pooled"] = (hotpot.records, corpus.pooled_index, corpus.description)
    if "sample" in args.datasets:
        sample = load_dataset(sample_questions())
        index, name = open_index(None)
        datasets["sample"] = (sample.records, index, name)

    rows = []
    for path in args.path.split(","):
        engine, jump = ENGINES[path]
        backend = load_backend("llamacpp", args.model, grammar_engine=engine, jump_forward=jump)
        for name, (records, index, corpus) in datasets.items():
            print(f"{path}: {name}", file=sys.stderr, flush=True)
            rows.append({"dataset": name, "path": path, **run(name, records, index, corpus, backend, args.limit)})
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[key]) for key in header) + " |")
    print("\nevaluated/step: prompt tokens llama.cpp evaluated in a step after the first (median); added/step:")
    print("prompt tokens the step added (the last step's text and its Observation); max extra: worst difference.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
