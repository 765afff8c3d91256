"""The three development corpora, run and compared together, as every change that touches answers is measured.

    python -m benchmarks.answers.three_corpora run SET [--code DIR] [--only NAMES] [--ids FILE] [--split test|tune]
                                                 [--agent NAME] [--unanswerable] [-o KEY=VALUE ...]
    python -m benchmarks.answers.three_corpora table SET [--over BASE_SET] [--split test|tune]
    python -m benchmarks.answers.three_corpora diff BASE_SET NEW_SET

A set is a folder of four run folders of `offline-agent eval` (the default agent and model, `--threads 1`): `deva`
and `devb`, the two halves of HotpotQA dev200 pooled over its 5,716 paragraphs; `pg`, the PostgreSQL manual's
questions over its HTML folder indexed as a user would (built as `--pgdocs-index` where it is missing, from
Debian's postgresql-doc-15, which `scripts/install.sh --test` installs); and `sample`, over corpora/sample/docs.

- `run` runs them two at a time, the halves first (a run folder resumes, so an interrupted set goes on where it
  stopped). `--code DIR` runs the package of another checkout (a `git worktree` of a commit, with the compiled
  kernels `offline_agent/retrieval/*.so` copied in): an eval imports some modules only when it first needs them,
  so editing this tree while a set runs would reach it. `--ids FILE` (one question id a line) runs only those
  questions (a run left with none is not started), for a rerun spliced over a whole set with `table --over`.
  `-o KEY=VALUE` (repeatable) gives every eval a strategy option (`-o without=sides`: the checks left out);
  `--agent rag` runs plain retrieval, the baseline every figure is reported beside; `--split test` runs only the
  frozen test split (splits.py), `--split tune` the rest. `--unanswerable` adds to `pg` and `sample` the questions
  their corpus cannot answer (issue 74: benchmarks/answers/data/pgdocs_unanswerable.jsonl, corpora/sample/
  unanswerable.jsonl; `--ids` and `--split` choose among them too), so one run measures both ways.
- `table` prints, per corpus, what the issue's tables report: EM, F1, EM by type, runs with a format error, steps,
  searches and prompt tokens a question (not cached in brackets), and the share of answered bridge questions that
  made one search; `--split` keeps one split's questions. With `--over BASE_SET`, each of SET's questions replaces
  BASE_SET's row of the same id and the rest are BASE_SET's: the figures of a whole run, where a change can only
  have reached the questions rerun (a run at `--threads 1` is deterministic on one machine). Under it, per corpus,
  answered right / abstained / wrong for answerable and unanswerable questions apart, and the CRAG-style score
  (right - wrong over all questions).
- `diff` prints, per corpus, the questions in both sets, how many turned right and wrong, and how many took the same
  path (every step's thought, tool call, Observation and Final, and the answer with its sources, as before: what a
  change meant to leave answers alone must show), then lists those whose exact match differs (id, gold, the two
  answers).

Seconds differ between machines many times over, and so can answers (the llama.cpp wheel is built on each
machine), so compare sets made on one machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.answers import splits
from benchmarks.kit import DATA, PG_HTML, PG_QUESTIONS, PG_UNANSWERABLE, SAMPLE, SAMPLE_QUESTIONS, SAMPLE_UNANSWERABLE
from benchmarks.kit import HOTPOT_DEV as DEV200
from benchmarks.kit import HOTPOT_POOL as POOL
from offline_agent.eval.results import RunFolder
from offline_agent.eval.scoring import abstention_summary, summarize
from offline_agent.retrieval.catalog import index_path
from offline_agent.retrieval.storage import is_index_dir

RUNS = ("deva", "devb", "pg", "sample")
CORPORA = {"dev200": ("deva", "devb"), "PostgreSQL": ("pg",), "sample": ("sample",)}
OFFLINE_AGENT = Path(sys.executable).with_name("offline-agent")


def questions(name: str, folder: Path, ids: set[str] | None, unanswerable: bool = False) -> Path | None:
    """The questions file of run `name`, written under `folder` (the dev halves, or a subset by id, or with the
    questions its corpus cannot answer added); None where the ids leave none of its questions."""
    if name in ("deva", "devb"):
        rows = json.loads(DEV200.read_text())
        rows = rows[:100] if name == "deva" else rows[100:]
        rows = [row for row in rows if ids is None or row["_id"] in ids]
        path = folder / f"{name}.json"
        path.write_text(json.dumps(rows))
        return path if rows else None
    source = PG_QUESTIONS if name == "pg" else SAMPLE_QUESTIONS
    if ids is None and not unanswerable:
        return source
    lines = source.read_text().splitlines()
    if unanswerable:
        lines += (PG_UNANSWERABLE if name == "pg" else SAMPLE_UNANSWERABLE).read_text().splitlines()
    lines = [line for line in lines if line.strip() and (ids is None or json.loads(line)["id"] in ids)]
    path = folder / f"{name}.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path if lines else None


def pool(name: str, pgdocs: str) -> str:
    return {"deva": str(POOL), "devb": str(POOL), "pg": pgdocs, "sample": str(SAMPLE / "docs")}[name]


def run(args: argparse.Namespace) -> int:
    out: Path = args.set
    (out / "questions").mkdir(parents=True, exist_ok=True)
    names = [name for name in RUNS if name in args.only.split(",")]
    ids = {line.strip() for line in args.ids.read_text().splitlines() if line.strip()} if args.ids else None
    if args.split:
        chosen = split_ids(args.split)
        ids = chosen if ids is None else ids & chosen
    if "pg" in names and not is_index_dir(index_path(args.pgdocs_index)):
        subprocess.run([str(OFFLINE_AGENT), "index", str(PG_HTML), "--name", args.pgdocs_index], check=True)
    env = dict(os.environ, **({"PYTHONPATH": str(args.code.resolve())} if args.code else {}))
    datasets = {name: questions(name, out / "questions", ids, args.unanswerable) for name in names}
    names = [name for name in names if datasets[name] is not None]  # --ids may leave a run no question
    for pair in (names[i : i + 2] for i in range(0, len(names), 2)):
        running, logs = [], []
        for name in pair:
            command = [str(OFFLINE_AGENT), "eval", str(datasets[name]), "--pool", pool(name, args.pgdocs_index)]
            command += ["--out", str(out / name), "--threads", "1", *(f"-o{pair}" for pair in args.option)]
            command += ["--agent", args.agent] if args.agent else []
            logs.append((out / f"{name}.log").open("a"))
            running.append(subprocess.Popen(command, env=env, stdout=logs[-1], stderr=subprocess.STDOUT))
        codes = [process.wait() for process in running]
        for log in logs:
            log.close()
        if any(codes):
            print(f"a run of {', '.join(pair)} failed; its log is in {out}", file=sys.stderr)
            return 1
    return 0


def rows_of(folder: Path) -> dict[str, dict[str, Any]]:
    """A run folder's result rows by question id (none where it has no results yet)."""
    return {str(row["id"]): row for row in RunFolder(folder).read_results()}


def corpus_rows(run_set: Path, over: Path | None) -> dict[str, list[dict[str, Any]]]:
    """Per corpus, the set's rows (spliced over `over`'s where given), in the base's order."""
    out = {}
    for corpus, names in CORPORA.items():
        rows: dict[str, dict[str, Any]] = {}
        for name in names:
            if over is not None:
                rows.update(rows_of(over / name))
            rows.update(rows_of(run_set / name))
        if rows:
            out[corpus] = list(rows.values())
    return out


def split_ids(split: str) -> set[str]:
    """The question ids of the three corpora's `split` ("test": the frozen test split; "tune": the rest)."""
    if split == "test":
        return {question for corpus in splits.CORPORA for question in splits.test_ids(corpus)}
    return {question for corpus in splits.CORPORA for question in splits.tune_ids(corpus, splits.corpus_ids(corpus))}


def table(args: argparse.Namespace) -> int:
    found = corpus_rows(args.set, args.over)
    if args.split:
        kept = split_ids(args.split)
        found = {corpus: [row for row in rows if str(row["id"]) in kept] for corpus, rows in found.items()}
        found = {corpus: rows for corpus, rows in found.items() if rows}
    if not found:
        print(f"no results under {args.set}", file=sys.stderr)
        return 1
    print(
        "| corpus | questions | EM | F1 | by type | format errors | steps a question | searches a question "
        "| hops a question | bridge answered after one search | prompt tokens a question (not cached) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for corpus, rows in found.items():
        summary = summarize(rows)
        tokens = summary["tokens"]
        cached = tokens["cached_per_question"]
        fresh = f" ({tokens['prompt_per_question'] - cached:,.0f})" if cached is not None else ""
        bridge = summary["by_type"].get("bridge", {}).get("one_search")
        types = ", ".join(
            f"{kind} {round(group['em'] * group['questions'])}/{group['questions']}"
            for kind, group in summary["by_type"].items()
        )
        cells = [
            corpus,
            str(summary["questions"]),
            f"{100 * summary['em']:.1f}",
            f"{100 * summary['f1']:.1f}",
            types,
            str(summary["format"]["format_error_runs"]),
            f"{summary['steps_per_question']['mean']:.2f}",
            f"{summary['searches_per_question']:.2f}",
            f"{summary['hops_per_question']:.2f}",
            "n/a" if bridge is None else f"{100 * bridge:.1f}%",
            f"{tokens['prompt_per_question']:,.0f}{fresh}",
        ]
        print(f"| {' | '.join(cells)} |")
    print()
    print(abstention_table(found))
    return 0


def abstention_table(found: dict[str, list[dict[str, Any]]]) -> str:
    """Per corpus: right / abstained / wrong (/ no answer) of the answerable and the unanswerable questions, the
    share of each abstained on, and the CRAG-style score (right - wrong over all)."""
    lines = [
        "| corpus | answerable: right / abstained / wrong / none | abstained | unanswerable: right / abstained / "
        "wrong / none | abstained | CRAG score |",
        "|---|---|---|---|---|---|",
    ]
    for corpus, rows in found.items():
        parts = abstention_summary(rows)
        cells = [corpus]
        for kind in ("answerable", "unanswerable"):
            part = parts[kind]
            counts = " / ".join(str(part[key]) for key in ("right", "abstained", "wrong", "none"))
            rate = part["abstained_rate"]
            cells += [f"{counts} of {part['questions']}", "n/a" if rate is None else f"{100 * rate:.1f}%"]
        cells.append(f"{100 * parts['crag_score']:.1f}%")
        lines.append(f"| {' | '.join(cells)} |")
    return "\n".join(lines)


def path(row: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a run wrote and read, step by step, then its answer and sources: the same where a change missed it."""
    steps = row["trajectory"]["steps"]
    fields = ("thought", "action", "argument", "observation", "final")
    return [tuple(step.get(key) for key in fields) for step in steps] + [(row["prediction"], str(row.get("sources")))]


def diff(args: argparse.Namespace) -> int:
    base, new = corpus_rows(args.base, None), corpus_rows(args.new, None)
    for corpus in CORPORA:
        before = {str(row["id"]): row for row in base.get(corpus, [])}
        after = {str(row["id"]): row for row in new.get(corpus, [])}
        shared = [key for key in before if key in after]
        changed = [key for key in shared if bool(before[key]["em"]) != bool(after[key]["em"])]
        up = sum(bool(after[key]["em"]) for key in changed)
        same = sum(path(before[key]) == path(after[key]) for key in shared)
        print(f"{corpus}: {len(shared)} questions in both, +{up} -{len(changed) - up}, {same} took the same path")
        for key in changed:
            mark = "+" if after[key]["em"] else "-"
            answers = f"{before[key]['prediction']!r} -> {after[key]['prediction']!r}"
            print(f"  {mark} {key}  gold {before[key]['gold']!r}: {answers}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="run the four run folders of a set")
    runner.add_argument("set", type=Path)
    runner.add_argument("--code", type=Path, help="a checkout whose package the evals run (PYTHONPATH)")
    runner.add_argument("--only", default=",".join(RUNS), help=f"which of {', '.join(RUNS)} to run")
    runner.add_argument("--ids", type=Path, help="a file of question ids, one a line: run only those")
    runner.add_argument("--pgdocs-index", default="pgdocs", help="the manual's index (built where missing)")
    runner.add_argument("--agent", help="the strategy every eval runs (default: the default; rag: plain retrieval)")
    runner.add_argument("--split", choices=("test", "tune"), help="run only the frozen test split, or the tuning split")
    runner.add_argument(
        "--unanswerable", action="store_true", help="add the questions the manual and the sample cannot answer"
    )
    runner.add_argument(
        "-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="a strategy option for every eval"
    )
    tabler = commands.add_parser("table", help="the issue's table of a set")
    tabler.add_argument("set", type=Path)
    tabler.add_argument("--over", type=Path, help="a whole set the questions of SET are spliced over")
    tabler.add_argument("--split", choices=("test", "tune"), help="the figures of the test split or the tuning split")
    differ = commands.add_parser("diff", help="the questions whose exact match differs between two sets")
    differ.add_argument("base", type=Path)
    differ.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        unknown = set(args.only.split(",")) - set(RUNS)
        if unknown:
            parser.error(f"unknown run {sorted(unknown)[0]!r}; choose from {', '.join(RUNS)}")
        if not DEV200.is_file() and {"deva", "devb"} & set(args.only.split(",")):
            parser.error(f"the HotpotQA data is not at {DATA / 'hotpotqa'} (set OFFLINE_AGENT_SHARED_DATA)")
    return {"run": run, "table": table, "diff": diff}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
