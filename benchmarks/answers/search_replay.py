"""Which questions of a run a change to the search can reach: each question's own tool calls, replayed.

    python -m benchmarks.answers.search_replay RUN_DIR [RUN_DIR ...] [--questions FILE]

For each question of each run folder, the tool calls its trajectory made (the model's own queries, in order) are
made again with the code of this repository as it is now, over the run's corpus, with the run's tools and search
options (config.json), and each Observation is compared with the one recorded. A run with `--threads 1` is
deterministic: a question whose replayed Observations are all as recorded keeps its answer, steps and tokens under
the change, so only the others need running again (`--questions FILE` writes them in their dataset's format, JSONL
lines or a HotpotQA JSON list, for `offline-agent eval`), and the run's figures with theirs spliced in are those of
a whole run. A recorded Observation cut to the run's token budget (ending " ...") counts as the same where the
replayed one begins with what was kept; a repeated call is answered by the loop, not the tool, and is skipped; the
documents a refusal showed become lookup's document, as in the run.

Also printed, per run: the questions (comparisons aside) whose gold answer some Observation holds, as recorded and
as replayed (before the cut), and the characters a search shows: what a change shows, before the model reads it.

Limits: the answer checks' own Observations (the documents a refusal shows) are not replayed. A change to how a
document is shown reaches them too, and calls for a whole run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.kit import ROOT, holds  # ROOT: a run's relative pool is most often relative to the repository
from offline_agent.agents.base import call_key
from offline_agent.agents.settings import agent_settings
from offline_agent.errors import ConfigError
from offline_agent.retrieval import open_corpus
from offline_agent.tools import DEFAULT_TOOLS, build_tools

CUT = " ..."


def same(recorded: str, replayed: str) -> bool:
    """Whether the model would read `replayed` as it read `recorded` (which may be cut to the run's budget)."""
    replayed = replayed.strip()
    if recorded == replayed:
        return True
    return recorded.endswith(CUT) and replayed.startswith(recorded[: -len(CUT)])


def recorded_run(run: Path, options: Mapping[str, str] | None = None) -> tuple[Any, tuple[str, ...], Any, Path]:
    """What a run folder's config.json says it ran with: its agent settings (with `options` over its strategy
    options, as `-o KEY=VALUE` gives them), its tools' names, its corpus (opened) and the path of its dataset."""
    if not (run / "config.json").is_file() or not (run / "results.jsonl").is_file():
        raise SystemExit(f"{run}: not a run folder (offline-agent eval --out writes config.json and results.jsonl)")
    config = json.loads((run / "config.json").read_text())
    corpus = config.get("corpus") or {}
    pool = corpus.get("pool") if isinstance(corpus, dict) else None
    if not pool:
        raise SystemExit(f"{run}: the run's config.json names no pool to search")
    try:
        chosen = {**(config.get("strategy_options") or {}), **(options or {})}
        settings = agent_settings(config.get("agent"), config.get("profile", "answer"), chosen)
    except ConfigError as error:  # a run of code with options this checkout lacks, or the other way round
        raise SystemExit(f"{run}: its config.json does not fit this checkout: {error}") from None
    names = tuple(config.get("tools") or DEFAULT_TOOLS)
    index = open_corpus(pool if Path(pool).exists() or not (ROOT / pool).exists() else ROOT / pool)
    dataset = config.get("dataset") or {}
    return settings, names, index, Path(dataset["path"] if isinstance(dataset, dict) else dataset)


def replay(run: Path) -> dict[str, Any]:
    """Per question: whether every replayed Observation is as recorded, and whether the gold is shown before/after."""
    settings, names, index, dataset = recorded_run(run)
    search_settings = settings.options.search_settings()
    out: dict[str, Any] = {"changed": [], "shown_before": 0, "shown_after": 0, "questions": 0, "chars": [0, 0], "n": 0}
    out["dataset"] = dataset
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        tools = build_tools(index, names, search_settings, question=row["question"])
        session = tools.get("search").session if "search" in names else None
        unchanged, before, after = True, False, False
        made: set[str] = set()
        for step in row["trajectory"]["steps"]:
            action, recorded = step.get("action"), step.get("observation") or ""
            if not action:  # a Final, or a refusal: what it showed is lookup's document from here on, as in the run
                shown_ids = (step.get("details") or {}).get("ids")
                if shown_ids and session is not None:
                    session.focus(index.passage(int(shown_ids[0])))
                read = holds(recorded, (row["gold"],))
                before, after = before or read, after or read
                continue
            key = call_key(action, step.get("argument") or "")
            if key in made:  # the loop answers a repeated call itself ("You already ran ..."), not the tool
                continue
            made.add(key)
            replayed = tools.run(action, step.get("argument") or "").observation
            unchanged = unchanged and same(recorded, replayed)
            before = before or holds(recorded, (row["gold"],))
            after = after or holds(replayed, (row["gold"],))
            if action == "search":
                out["chars"][0] += len(recorded)
                out["chars"][1] += len(replayed)
                out["n"] += 1
        if not unchanged:
            out["changed"].append(str(row["id"]))
        if row.get("type") != "comparison":
            out["questions"] += 1
            out["shown_before"] += before
            out["shown_after"] += after
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (offline-agent eval --out)")
    parser.add_argument(
        "--questions", type=Path, help="write the changed questions here, in their dataset's format (for eval)"
    )
    args = parser.parse_args(argv)
    changed: dict[str, Path] = {}
    for run in args.runs:
        found = replay(run)
        searches = max(found["n"], 1)
        print(
            f"{run}: {len(found['changed'])} questions whose Observations change; gold shown (comparisons aside) "
            f"{found['shown_before']} -> {found['shown_after']} of {found['questions']}; characters a search "
            f"{found['chars'][0] // searches:,} as recorded (cut to the run's token budget), "
            f"{found['chars'][1] // searches:,} replayed (before the cut)"
        )
        if found["changed"]:
            print("  " + " ".join(found["changed"]))
        changed.update(dict.fromkeys(found["changed"], found["dataset"]))
    if args.questions is not None and changed:
        write_questions(changed, args.questions)
    elif args.questions is not None:
        print(f"no question changes: {args.questions} not written")
    return 0


def write_questions(changed: dict[str, Path], out: Path) -> None:
    """The changed questions as their datasets hold them: JSONL lines, or a HotpotQA JSON list."""
    lines: list[str] = []
    records: list[Any] = []
    for path in sorted(set(changed.values())):
        text = path.read_text()
        if path.suffix == ".jsonl":
            lines += [line for line in text.splitlines() if line.strip() and str(json.loads(line)["id"]) in changed]
        else:
            records += [record for record in json.loads(text) if str(record.get("_id", record.get("id"))) in changed]
    if lines and records:
        raise SystemExit("the runs' datasets are JSONL and HotpotQA JSON: write their changed questions one at a time")
    out.write_text(json.dumps(records) if records else "".join(line + "\n" for line in lines))
    print(f"wrote {len(lines) + len(records)} questions to {out}")


if __name__ == "__main__":
    raise SystemExit(main())
