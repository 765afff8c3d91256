"""benchmarks/answers/search_replay.py on a real run folder (a scripted model's run of `eval` over a real index): a run
replayed with the code that made it changes no question; a recorded Observation the search would now show
otherwise makes its question one to run again, written out as the dataset has it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_eval_runner import QUESTIONS, ROOT, options, outputs

from offline_agent.backends import ScriptedBackend
from offline_agent.eval.runner import run_evaluation

REPLAY = [sys.executable, "-m", "benchmarks.answers.search_replay"]


def replay(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REPLAY, *map(str, args)], capture_output=True, text=True, check=True, cwd=ROOT)


def test_a_run_replays_as_recorded_and_a_changed_observation_is_found(tiny_corpus: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS[:2]))
    run = tmp_path / "run"
    # q1 searches twice and answers; q2 searches, then repeats the search (the loop answers that, not the tool)
    script = [*outputs("q1"), "Thought: Pierre.\nAction: search[Pierre Curie born]"]
    script += ["Thought: Again.\nAction: search[Pierre Curie born]", "Thought: Marie.\nFinal: Marie Curie"]
    run_evaluation(options(questions, tiny_corpus, run, grammar=False), backend=ScriptedBackend(script))

    same = replay(run, "--questions", tmp_path / "changed.jsonl")
    assert f"{run}: 0 questions whose Observations change; gold shown (comparisons aside) 1 -> 1 of 1" in same.stdout
    assert not (tmp_path / "changed.jsonl").exists()

    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    rows[0]["trajectory"]["steps"][1]["observation"] = "[1] Warsaw: an Observation this search no longer shows."
    (run / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    changed = replay(run, "--questions", tmp_path / "changed.jsonl")
    assert f"{run}: 1 questions whose Observations change" in changed.stdout
    assert changed.stdout.splitlines()[1].split() == ["q1"]
    assert [json.loads(line) for line in (tmp_path / "changed.jsonl").read_text().splitlines()] == [QUESTIONS[0]]
