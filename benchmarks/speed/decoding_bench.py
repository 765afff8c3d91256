"""Speculative decoding (prompt lookup) and batched evaluation (`eval --parallel N`), with the default model.

`speculative`: the ReAct agent on `make run`'s question and the first N HotpotQA dev questions (pooled), each
question run back to back with drafts off and on (two backends loaded side by side, the order alternating per
question, so a busy machine hurts both alike). Prints per setting: generated tokens/s (generated tokens over
generation seconds, prompts excluded), seconds per question, and the acceptance rate (draft tokens kept over
draft tokens evaluated); says whether every step's text was the same.

`parallel`: `eval` on the first N HotpotQA dev questions (pooled over --pool) with --parallel 1, 2, 4 (and
--draft-tokens as given), each in a fresh run folder; prints questions/hour, its ratio to --parallel 1, and
whether the answers equal those of --parallel 1.

Timings on a shared machine are noisy: each figure is printed with the load average (`uptime`) taken before and
after it. Asserts nothing.

    python -m benchmarks.speed.decoding_bench speculative [--model NAME] [--limit 4] [--draft-tokens 8]
    python -m benchmarks.speed.decoding_bench parallel [--model NAME] [--limit 8] [--parallel 1,2,4] [--draft-tokens 0]
                                                 [--gpu-layers 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.kit import HOTPOT_DEV, HOTPOT_POOL
from offline_agent.agents import RunConfig
from offline_agent.eval.corpora import open_eval_corpus
from offline_agent.eval.datasets import load_dataset
from offline_agent.runner import Session, load_backend, open_index

# ../shared/data beside the repository, or OFFLINE_AGENT_SHARED_DATA (a git worktree elsewhere).
HOTPOT, POOL = HOTPOT_DEV, HOTPOT_POOL
MAKE_RUN_QUESTION = "Which river flows through the birth city of James Joyce?"


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


class RecordingBackend:
    """Passes every call to `backend` and keeps the Completions it returns."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.completions: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def complete(self, prompt: str, **kwargs: Any) -> Any:
        completion = self._backend.complete(prompt, **kwargs)
        self.completions.append(completion)
        return completion


def speculative(args: argparse.Namespace) -> int:
    questions: list[tuple[str, str, Any, str]] = []
    index, name = open_index(None)
    questions.append(("make run", MAKE_RUN_QUESTION, index, name))
    if args.limit:
        hotpot = load_dataset(args.hotpot)
        corpus = open_eval_corpus("pooled", hotpot, None)
        for record in hotpot.records[: args.limit]:
            questions.append((record.id, record.question, corpus.pooled_index, corpus.description))
    backends = {
        "off": RecordingBackend(load_backend("llamacpp", args.model, draft_tokens=0)),
        f"{args.draft_tokens}": RecordingBackend(load_backend("llamacpp", args.model, draft_tokens=args.draft_tokens)),
    }
    seconds: dict[str, list[float]] = {key: [] for key in backends}
    same = True
    print(f"before: {load()}", file=sys.stderr)
    for i, (qid, question, index, corpus) in enumerate(questions):
        order = list(backends) if i % 2 == 0 else list(reversed(backends))
        raws = {}
        for key in order:
            started = time.perf_counter()
            trajectory = Session(backend=backends[key], index=index, corpus=corpus).ask(question, RunConfig())
            seconds[key].append(time.perf_counter() - started)
            raws[key] = [step.raw for step in trajectory.steps]
            print(
                f"  {qid} drafts {key}: {seconds[key][-1]:.1f} s {trajectory.answer!r} ({load()})",
                file=sys.stderr,
                flush=True,
            )
        same &= len({tuple(r) for r in raws.values()}) == 1
    after = load()
    print(f"\n{len(questions)} questions (make run's and {len(questions) - 1} HotpotQA pooled); {after} at the end")
    print("| drafts | generated tokens/s | s/question (mean) | drafted | accepted | acceptance |")
    print("|---|---|---|---|---|---|")
    base = None
    for key, recorder in backends.items():
        done = recorder.completions
        tokens = sum(c.usage.generated_tokens for c in done)
        generate_s = sum(c.timings.generate_s for c in done)
        drafted = sum(c.drafted_tokens for c in done)
        accepted = sum(c.accepted_tokens for c in done)
        rate = tokens / generate_s if generate_s else 0.0
        base = base or rate
        share = f"{100 * accepted / drafted:.0f}%" if drafted else "-"
        mean_s = sum(seconds[key]) / len(seconds[key])
        print(f"| {key} | {rate:.1f} ({rate / base:.2f}x) | {mean_s:.1f} | {drafted} | {accepted} | {share} |")
    print(f"\nevery step's text the same with and without drafts: {same}")
    return 0


def parallel(args: argparse.Namespace) -> int:
    from offline_agent.backends.registry import BackendOptions
    from offline_agent.eval.runner import EvalOptions, run_evaluation

    rows = []
    answers: dict[int, list[Any]] = {}
    for n in [int(x) for x in args.parallel.split(",")]:
        backend = load_backend(
            "llamacpp", args.model, parallel=n, draft_tokens=args.draft_tokens, gpu_layers=args.gpu_layers
        )
        with tempfile.TemporaryDirectory() as folder:
            options = EvalOptions(
                dataset=args.hotpot,
                pool=args.pool,
                setting="pooled",
                limit=args.limit,
                out=Path(folder) / "run",
                backend_options=BackendOptions(parallel=n, gpu_layers=args.gpu_layers),
            )
            before = load()
            started = time.perf_counter()
            run_evaluation(options, backend=backend)
            wall = time.perf_counter() - started
            results = (Path(folder) / "run" / "results.jsonl").read_text().splitlines()
        answers[n] = [json.loads(line)["prediction"] for line in results]
        rows.append((n, wall, before, load()))
        print(f"  --parallel {n}: {wall:.0f} s ({before} -> {load()})", file=sys.stderr, flush=True)
        del backend
    first = rows[0]
    print(
        f"\n{args.limit} HotpotQA dev questions, pooled; --draft-tokens {args.draft_tokens}; "
        f"--gpu-layers {args.gpu_layers}"
    )
    print("| --parallel | seconds | questions/hour | vs first | answers as first | load before -> after |")
    print("|---|---|---|---|---|---|")
    for n, wall, before, after in rows:
        qph = args.limit * 3600 / wall
        ratio = first[1] / wall
        print(
            f"| {n} | {wall:.0f} | {qph:.0f} | {ratio:.2f}x | {answers[n] == answers[first[0]]} | {before} -> {after} |"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    spec = sub.add_parser("speculative")
    spec.add_argument("--model", default=None)
    spec.add_argument("--limit", type=int, default=4, help="HotpotQA questions besides make run's")
    spec.add_argument("--draft-tokens", type=int, default=8)
    spec.add_argument("--hotpot", type=Path, default=HOTPOT)
    par = sub.add_parser("parallel")
    par.add_argument("--model", default=None)
    par.add_argument("--limit", type=int, default=8)
    par.add_argument("--parallel", default="1,2,4")
    par.add_argument("--draft-tokens", type=int, default=0)
    par.add_argument("--gpu-layers", type=int, default=0, help="layers on the GPU (-1: all); needs a GPU build")
    par.add_argument("--hotpot", type=Path, default=HOTPOT)
    par.add_argument("--pool", type=Path, default=POOL)
    args = parser.parse_args()
    if not args.hotpot.is_file():
        print(f"error: {args.hotpot} not found (../shared/data)", file=sys.stderr)
        return 1
    return speculative(args) if args.command == "speculative" else parallel(args)


if __name__ == "__main__":
    sys.exit(main())
