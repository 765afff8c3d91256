"""Each answer check and rewrite left out in turn, on the three development corpora: what it costs to be without it.

    python -m benchmarks.answers.check_ablation BASE_SET OUT [--only KEYS] [--pgdocs-index NAME] [--show] [--table]

BASE_SET is a set of `three_corpora.py` (four run folders of the default agent at `--threads 1`, made with this
checkout's code). For each check and rewrite (`-o without=KEY`; `--only` names some, and `a+b` leaves a family out
together), `check_replay.py`'s replay finds the questions whose Finals would be decided otherwise without it:
every other question keeps its path. Those questions are run again with `-o without=KEY` (two evals at a time,
under OUT/KEY, resumable) and spliced over BASE_SET. A row per key prints, per corpus, EM with the questions that
turned right (+) and wrong (-), the sum of the right answers over the three, and the prompt tokens a question on
dev200. `--show` lists each answer that turned; `--table` only prints the rows of the runs under OUT. With no
question reached, a key's row is BASE_SET's own.

A check that pays lowers some corpus when it is left out; one whose row lowers none and raises the sum does not
pay, and goes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.answers.check_replay import replay
from benchmarks.answers.three_corpora import CORPORA, OFFLINE_AGENT, RUNS, pool, questions, rows_of
from offline_agent.checks.pipeline import check_keys


def without(key: str) -> str:
    """The `-o without=` value of a row's key: one check or rewrite, or several joined by + (left out together)."""
    return key.replace("+", ",")


def reached(base: Path, key: str) -> set[str]:
    """The ids of BASE's questions whose Finals are decided otherwise without `key`."""
    ids: set[str] = set()
    for name in RUNS:
        if (base / name).exists():  # a set may lack a run
            ids.update(replay(base / name, {"without": without(key)})["changed"])
    return ids


def jobs(base: Path, out: Path, keys: list[str]) -> list[tuple[str, str, Path]]:
    """(key, run name, questions file) for every run that has reached questions."""
    found = []
    for key in keys:
        folder = out / key
        (folder / "questions").mkdir(parents=True, exist_ok=True)
        ids = reached(base, key)
        (folder / "ids.txt").write_text("".join(f"{qid}\n" for qid in sorted(ids)))
        for name in RUNS:
            dataset = questions(name, folder / "questions", ids)
            if dataset is not None:
                found.append((key, name, dataset))
    return found


def run_one(out: Path, pgdocs: str, job: tuple[str, str, Path]) -> int:
    key, name, dataset = job
    command = [str(OFFLINE_AGENT), "eval", str(dataset), "--pool", pool(name, pgdocs)]
    command += ["--out", str(out / key / name), "--threads", "1", "-o", f"without={without(key)}"]
    with (out / key / f"{name}.log").open("a") as log:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode


def rows_by_corpus(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Per corpus, the rows of `folder`'s runs by question id."""
    return {
        corpus: {qid: row for name in names for qid, row in rows_of(folder / name).items()}
        for corpus, names in CORPORA.items()
    }


def table(base: Path, out: Path, keys: list[str], show: bool) -> None:
    before = {corpus: rows for corpus, rows in rows_by_corpus(base).items() if rows}
    tokened = next(iter(before), None)  # dev200 where the set has it
    print(
        f"| left out | questions reached | {' | '.join(f'{corpus} EM' for corpus in before)} | right, all "
        f"{len(before)} | prompt tokens, {tokened} |"
    )
    print("|---|---|" + "---|" * len(before) + "---|---|")
    rows = [("nothing", before, {corpus: {} for corpus in before})]
    rows += [(key, before, rows_by_corpus(out / key)) for key in keys]
    for key, old, new in rows:
        cells, turned, total, tokens = [], [], 0.0, 0.0
        for corpus in old:
            merged = {**old[corpus], **new[corpus]}
            up = [qid for qid, row in new[corpus].items() if row["em"] > old[corpus][qid]["em"]]
            down = [qid for qid, row in new[corpus].items() if row["em"] < old[corpus][qid]["em"]]
            right = sum(row["em"] for row in merged.values())
            total += right
            cells.append(f"{100 * right / len(merged):.1f} (+{len(up)} -{len(down)})")
            turned += [(corpus, qid, old[corpus][qid], new[corpus][qid]) for qid in up + down]
            if corpus == tokened:
                tokens = sum(row["prompt_tokens"] for row in merged.values()) / len(merged)
        count = ", ".join(str(len(new[corpus])) for corpus in old)
        print(f"| {key} | {count} | {' | '.join(cells)} | {int(total)} | {tokens:,.0f} |")
        if show:
            for corpus, qid, was, now in turned:
                print(f"    {corpus} {qid}: {was['prediction']!r} -> {now['prediction']!r} (gold {was['gold']!r})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="a whole set of three_corpora.py, made with this checkout's code")
    parser.add_argument("out", type=Path, help="where each key's reruns go (OUT/KEY/deva, ...)")
    parser.add_argument(
        "--only",
        help=f"comma-separated keys, a row each; a+b leaves both out together (default: {', '.join(check_keys())})",
    )
    parser.add_argument("--pgdocs-index", default="pgdocs", help="the manual's index (as BASE_SET's pg run used)")
    parser.add_argument("--show", action="store_true", help="list each answer that turned")
    parser.add_argument("--table", action="store_true", help="only print the table of the runs under OUT")
    args = parser.parse_args(argv)
    keys = args.only.split(",") if args.only else list(check_keys())
    unknown = [name for key in keys for name in key.split("+") if name not in check_keys()]
    if unknown:
        parser.error(f"no check or rewrite named {', '.join(unknown)}; choose from {', '.join(check_keys())}")
    if not any((args.base / name).exists() for name in RUNS):
        parser.error(f"{args.base}: no run folder of a set in it ({', '.join(RUNS)})")
    if not args.table:
        found = jobs(args.base, args.out, keys)
        print(f"{len(found)} runs to make for {len(keys)} keys", file=sys.stderr)
        with ThreadPoolExecutor(2) as pool_of_two:
            codes = list(pool_of_two.map(lambda job: run_one(args.out, args.pgdocs_index, job), found))
        failed = [f"{key}/{name}" for (key, name, _), code in zip(found, codes, strict=True) if code]
        if failed:
            print(f"these runs failed (their logs are beside them): {', '.join(failed)}", file=sys.stderr)
            return 1
    table(args.base, args.out, keys, args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
