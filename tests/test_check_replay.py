"""benchmarks/answers/check_replay.py on a real run folder (a scripted model's run of `eval` with the verify strategy
over a real index): replayed with the code that made it, every Final is decided as recorded; a recorded decision this
code would not make (a refusal it does not give, an answer it lets stand otherwise) makes its question one to run
again, written out as the dataset has it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_eval_runner import QUESTIONS, ROOT

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.eval.runner import EvalOptions, run_evaluation

REPLAY = [sys.executable, "-m", "benchmarks.answers.check_replay"]


def replay(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REPLAY, *map(str, args)], capture_output=True, text=True, check=True, cwd=ROOT)


def verify_run(tiny_corpus: Path, tmp_path: Path) -> Path:
    """q1 answered with a name of the question (refused as in_question), then with the river."""
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(QUESTIONS[0]) + "\n")
    run = tmp_path / "run"
    script = [
        "Thought: Find where she was born.\nAction: search[Marie Curie born]",
        "Thought: The city of Marie Curie.\nFinal: Marie Curie",
        "Thought: Now the river of Warsaw.\nAction: search[Warsaw river]",
        "Thought: [1] says the Vistula flows through Warsaw.\nFinal: Vistula",
    ]
    settings = agent_settings("verify", "answer", max_steps=6)
    options = EvalOptions(dataset=questions, pool=tiny_corpus, out=run, settings=settings)
    run_evaluation(options, backend=ScriptedBackend(script))
    return run


def rows_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def test_a_run_replays_as_recorded(tiny_corpus: Path, tmp_path: Path) -> None:
    run = verify_run(tiny_corpus, tmp_path)
    steps = rows_of(run)[0]["trajectory"]["steps"]
    assert steps[1]["details"]["refusal"] == {"answer": "Marie Curie", "reason": "in_question"}
    assert steps[3]["final"] == "Vistula"

    same = replay(run, "--questions", tmp_path / "reached.jsonl")
    assert f"{run}: 2 Finals, 2 decided as recorded, 0 otherwise, 0 ask the model; 0 questions reached" in same.stdout
    assert not (tmp_path / "reached.jsonl").exists()


def test_a_decision_the_checks_would_not_make_reaches_its_question(tiny_corpus: Path, tmp_path: Path) -> None:
    run = verify_run(tiny_corpus, tmp_path)
    rows = rows_of(run)
    # As if an older check had refused the river, and the run had gone on: this code lets it stand.
    rows[0]["trajectory"]["steps"][3]["details"] = {"refusal": {"answer": "Vistula", "reason": "kind"}}
    (run / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))

    changed = replay(run, "--questions", tmp_path / "reached.jsonl", "--ids", tmp_path / "ids.txt", "--show")
    assert (
        f"{run}: 2 Finals, 1 decided as recorded, 1 otherwise, 0 ask the model; 1 questions reached" in changed.stdout
    )
    assert changed.stdout.splitlines()[1].split() == ["q1"]
    assert "q1 step 3: refused: kind 'Vistula' -> stood 'Vistula'" in changed.stdout
    assert [json.loads(line) for line in (tmp_path / "reached.jsonl").read_text().splitlines()] == [QUESTIONS[0]]
    assert (tmp_path / "ids.txt").read_text() == "q1\n"


def test_a_folder_that_is_no_run_or_no_verify_run_is_a_one_line_error(tiny_corpus: Path, tmp_path: Path) -> None:
    missing = subprocess.run([*REPLAY, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == f"{tmp_path}: not a run folder (offline-agent eval --out writes config.json and results.jsonl)"
    )
    run = verify_run(tiny_corpus, tmp_path)
    config = json.loads((run / "config.json").read_text())
    config["agent"] = "react"  # the verify options are then unknown, as for a run of code with other options
    (run / "config.json").write_text(json.dumps(config))
    other = subprocess.run([*REPLAY, str(run)], capture_output=True, text=True, cwd=ROOT)
    assert other.returncode == 1 and len(other.stderr.strip().splitlines()) == 1
    assert other.stderr.startswith(f"{run}: its config.json does not fit this checkout: unknown option")


def test_a_final_that_now_asks_the_model_is_reached_where_a_check_before_or_one_taken_out_had_refused_it() -> None:
    from benchmarks.answers.check_replay import asking_reaches

    order = ["unread", "one_side", "compare", "sides", "same"]
    assert asking_reaches("refused: one_side", "sides", order)  # one_side refuses it no more
    assert asking_reaches("refused: modifier", "sides", order)  # a check this code does not run
    assert not asking_reaches("refused: sides", "sides", order)  # the model's call is taken as recorded
    assert not asking_reaches("refused: same", "sides", order)
    assert not asking_reaches("stood", "sides", order)
