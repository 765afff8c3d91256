"""Which questions of a run a change to the answer checks can reach: every Final of every trajectory, checked again.

    python -m benchmarks.answers.check_replay RUN_DIR [RUN_DIR ...] [--ids FILE] [--questions FILE] [--show]

For each Final a run wrote, the one that stood and those refused, the verify strategy of the checkout this script
is in decides again what becomes of it: the rewrite before the checks, the checks in their order (none on a step
that may only answer), and the rewrite of an answer that stands. It is given the steps before it, the model's text
and the grammar's refusals of that step as recorded, and the run's corpus, tools and options (config.json). Its
decision (the reason of the refusal and the answer it refused, or the answer that stood) is compared with the one
recorded. A question whose every Final is decided as recorded keeps its path under the change (a run at `--threads
1` is deterministic), so only the others need running again: `--ids FILE` writes their ids one a line (for
`three_corpora.py run --ids`), `--questions FILE` the questions in their dataset's format (JSONL lines or a HotpotQA
JSON list, for `offline-agent eval`); `--show` prints each decision that differs.

Run from a checkout's root, `python -m` puts that checkout first on sys.path (PYTHONPATH does not change which code
it runs): to replay with a commit's checks, run it from the root of a worktree of that commit.

Limits:
- A check that decides with a model call of its own (`sides` and `same` weigh a yes/no or choice answer so) cannot
  be decided without the model: such a Final is counted apart ("ask the model"), and it counts as reached only where
  the run's decision came from a check before the one that asked, or from a check this code does not have (that
  check no longer refuses: so a check taken out reaches every Final it refused). The decision of
  the check that asked, and of those after it, is taken to be the run's: a change to them needs a run.
- What a refusal shows is not compared, only whether it refused, why and what: the documents it shows are looked
  up again, but read_hop's reading of the refused answer's document (a model call after the decision) is left out.
- The run's code must have recorded what this code reads: the steps' raw text and the grammar's refusals.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.answers.search_replay import recorded_run, write_questions
from offline_agent.agents.react import LoopState
from offline_agent.agents.step_runner import TurnResult
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.checks import FinalCheck
from offline_agent.details import Rejection
from offline_agent.grounding import Grounding
from offline_agent.parse import StepParseError
from offline_agent.steps import StepRecord, Trajectory
from offline_agent.tools import build_tools


class AsksTheModel(Exception):
    """A check asked the model: its decision, and those of the checks after it, cannot be replayed."""


class Asking:
    """A check that records its name as the one deciding, so that a model call it makes says which check asked."""

    deciding = ""

    def __init__(self, check: FinalCheck) -> None:
        self.check = check

    def __getattr__(self, name: str) -> Any:
        return getattr(self.check, name)

    def refuse(self, candidate: Any) -> Any:
        Asking.deciding = self.check.name
        return self.check.refuse(candidate)


def recorded_decision(step: dict[str, Any]) -> tuple[str, str]:
    """("refused: REASON", the answer refused) or ("stood", the answer), as the run recorded the Final."""
    refusal = (step.get("details") or {}).get("refusal")
    if refusal:
        return f"refused: {refusal['reason']}", refusal["answer"]
    return "stood", step.get("final") or ""


def replay(run: Path, options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Per question of `run`: whether each of its Finals is decided as recorded (and the decisions that differ),
    by this checkout's checks under the run's options, with `options` over them."""
    settings, names, index, dataset = recorded_run(run, options)
    if not hasattr(settings.options, "read_hop"):
        raise SystemExit(f"{run}: the run's strategy ({settings.agent}) has no answer checks to replay")
    out: dict[str, Any] = {"changed": {}, "finals": 0, "model": 0, "counts": Counter(), "dataset": dataset}
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        tools = build_tools(index, names, settings.options.search_settings(), question=row["question"])
        agent = settings.build(ScriptedBackend(), tools)
        agent.read_off = agent.word = _asks_the_model  # type: ignore[method-assign]
        pipeline = agent.pipeline
        pipeline.read_hop = False  # its reading of a refused answer's document comes after the decision
        order = [check.name for check in pipeline.checks]
        pipeline.checks = tuple(Asking(check) for check in pipeline.checks)
        steps = row["trajectory"]["steps"]
        records = [StepRecord.from_dict(step, agent.details_type) for step in steps]
        for position, step in enumerate(steps):
            recorded = recorded_decision(step)
            try:
                replayed = decide(agent, row["question"], records[:position], step)
            except AsksTheModel:
                out["finals"] += 1
                out["model"] += 1
                asked = Asking.deciding
                if asking_reaches(recorded[0], asked, order):
                    out["changed"].setdefault(str(row["id"]), []).append((position, recorded, (f"asks: {asked}", "")))
                continue
            if replayed is None:  # no Final on this step
                continue
            out["finals"] += 1
            out["counts"][recorded == replayed] += 1
            if recorded != replayed:
                out["changed"].setdefault(str(row["id"]), []).append((position, recorded, replayed))
    return out


def asking_reaches(recorded: str, asked: str, order: list[str]) -> bool:
    """Whether a Final that now reaches the check `asked` (which asks the model) was decided otherwise by the run:
    refused by a check that this code runs before `asked`, or by one it no longer has. A Final that stood, or that
    `asked` or a check after it refused, is taken to be decided as recorded (the model's call is not replayed)."""
    if not recorded.startswith("refused: "):
        return False
    reason = recorded.removeprefix("refused: ")
    return reason not in order or order.index(reason) < order.index(asked)


def _asks_the_model(*args: Any, **kwargs: Any) -> str | None:
    raise AsksTheModel


def decide(agent: Any, question: str, before: list[StepRecord], step: dict[str, Any]) -> tuple[str, str] | None:
    """What `agent`'s loop does with the Final of `step` after the steps `before`, through the hooks its loop calls
    (react.py: review_step, then dictated and check_final, except on a step that may only answer, then
    final_answer): refused (and why, and what) or stood (and as what). None for a step with no Final."""
    raw = step.get("raw") or ""
    final_only = bool(step.get("final_only"))
    try:
        parsed = (agent.final_parser if final_only else agent.parser).parse(raw)
    except StepParseError:
        return None
    if parsed.final is None:
        return None
    form = agent.new_form(question)
    grounding = Grounding([], yes_no=False) if agent.options.grounded else None
    state = LoopState(Trajectory(question=question, steps=list(before)), grounding=grounding, form=form)
    details = agent.details_type()
    rejections: list[Rejection] = [
        (int(offset), str(piece)) for offset, piece in (step.get("details") or {}).get("rejections") or []
    ]
    details.rejections = rejections or None
    record = StepRecord(index=step["index"], raw=raw, details=details, final_only=final_only)
    turn = TurnResult(rejections=rejections, last_rejections=rejections)
    reviewed = agent.review_step(state, record, parsed)
    if reviewed is None:
        return "refused by review_step", parsed.final
    refusal = agent.dictated(state, record, reviewed) or (
        None if final_only else agent.check_final(state, record, reviewed, turn)
    )
    if refusal is not None:
        assert record.details is not None and record.details.refusal is not None
        return f"refused: {record.details.refusal.reason}", record.details.refusal.answer
    return "stood", agent.final_answer(state, record, reviewed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (offline-agent eval --out)")
    parser.add_argument("--ids", type=Path, help="write the reached questions' ids here, one a line")
    parser.add_argument("--questions", type=Path, help="write the reached questions here, in their dataset's format")
    parser.add_argument("--show", action="store_true", help="print each decision that differs")
    parser.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="decide as a run with this strategy option would (-o without=sides), repeatable",
    )
    args = parser.parse_args(argv)
    options = {}
    for pair in args.option:
        key, equals, value = pair.partition("=")
        if not equals:
            parser.error(f"-o takes KEY=VALUE, not {pair!r}")
        options[key.strip()] = value
    reached: dict[str, Path] = {}
    for run in args.runs:
        found = replay(run, options)
        same, differ = found["counts"][True], found["counts"][False]
        print(
            f"{run}: {found['finals']} Finals, {same} decided as recorded, {differ} otherwise, {found['model']} ask "
            f"the model; {len(found['changed'])} questions reached"
        )
        if found["changed"]:
            print("  " + " ".join(found["changed"]))
        if args.show:
            for qid, changes in found["changed"].items():
                for position, recorded, replayed in changes:
                    print(f"    {qid} step {position}: {recorded[0]} {recorded[1]!r} -> {replayed[0]} {replayed[1]!r}")
        reached.update(dict.fromkeys(found["changed"], found["dataset"]))
    if args.ids is not None:
        args.ids.write_text("".join(f"{qid}\n" for qid in reached))
    if args.questions is not None and reached:
        write_questions(reached, args.questions)
    elif args.questions is not None:
        print(f"no question reached: {args.questions} not written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
