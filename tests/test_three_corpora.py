"""benchmarks/answers/three_corpora.py on real run folders (a scripted model's `eval` runs over a real index): a rerun
of one question spliced over a whole set gives the whole set's table, `diff` names the question that turned and counts
the paths left as they were, and a bad run name is a one-line usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_eval_runner import QUESTIONS, ROOT, options, outputs

from offline_agent.backends import ScriptedBackend
from offline_agent.eval.runner import run_evaluation


def three(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchmarks.answers.three_corpora", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=check, cwd=ROOT)


def sample_run(folder: Path, questions: list[dict], turns: list[str], corpus: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    path = folder.parent / "questions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in questions))
    run_evaluation(options(path, corpus, folder, grammar=False), backend=ScriptedBackend(turns))


def test_a_rerun_spliced_over_a_set_and_the_questions_that_turned(tiny_corpus: Path, tmp_path: Path) -> None:
    base, rerun = tmp_path / "base", tmp_path / "rerun"
    sample_run(base / "sample", QUESTIONS[:2], outputs("q1", "q2"), tiny_corpus)  # q1 right, q2 wrong
    right = ["Thought: Both.\nAction: search[Pierre Curie born]", "Thought: Pierre.\nFinal: Pierre Curie"]
    sample_run(rerun / "sample", QUESTIONS[1:2], right, tiny_corpus)  # q2 again, now right

    table = three("table", base).stdout.splitlines()
    assert table[0].startswith("| corpus | questions | EM | F1 | by type |")
    assert table[2].startswith("| sample | 2 | 50.0 |") and "bridge 1/1, comparison 0/1" in table[2]
    spliced = three("table", rerun, "--over", base).stdout.splitlines()
    assert spliced[2].startswith("| sample | 2 | 100.0 | 100.0 | bridge 1/1, comparison 1/1 | 0 |")

    diff = three("diff", base, rerun).stdout
    assert "sample: 1 questions in both, +1 -0, 0 took the same path" in diff
    assert "  + q2  gold 'Pierre Curie': 'Marie Curie' -> 'Pierre Curie'" in diff
    assert "dev200: 0 questions in both" in diff
    assert "sample: 2 questions in both, +0 -0, 2 took the same path" in three("diff", base, base).stdout


def test_an_unknown_run_name_is_a_usage_error(tmp_path: Path) -> None:
    done = three("run", tmp_path / "set", "--only", "sample,dev", check=False)
    assert done.returncode == 2
    error = "three_corpora.py: error: unknown run 'dev'; choose from deva, devb, pg, sample"
    assert done.stderr.splitlines()[-1] == error
    assert not (tmp_path / "set").exists()


def test_ids_that_leave_a_run_no_question_leave_it_out(tmp_path: Path) -> None:
    from benchmarks.answers import three_corpora

    first = json.loads(three_corpora.SAMPLE_QUESTIONS.read_text().splitlines()[0])
    subset = three_corpora.questions("sample", tmp_path, {first["id"], "pg001"})
    assert subset is not None and [json.loads(line) for line in subset.read_text().splitlines()] == [first]
    assert three_corpora.questions("sample", tmp_path, {"pg001"}) is None


def test_the_unanswerable_questions_run_beside_the_answerable_ones(tmp_path: Path) -> None:
    from benchmarks.answers import three_corpora

    both = three_corpora.questions("sample", tmp_path, None, unanswerable=True)
    assert both is not None
    rows = [json.loads(line) for line in both.read_text().splitlines()]
    unanswerable = [row for row in rows if row.get("answerable") is False]
    assert len(unanswerable) >= 20 and len(rows) - len(unanswerable) == 87
    only = three_corpora.questions("sample", tmp_path, {"su01", "s001"}, unanswerable=True)
    assert only is not None and [json.loads(line)["id"] for line in only.read_text().splitlines()] == ["s001", "su01"]


def test_the_table_reports_right_abstained_and_wrong_of_each_kind() -> None:
    from benchmarks.answers import three_corpora
    from offline_agent.eval.scoring import abstention_summary

    rows = [
        {"id": "a", "answerable": True, "outcome": "right"},
        {"id": "b", "answerable": True, "outcome": "wrong"},
        {"id": "c", "answerable": False, "outcome": "abstained", "abstained": True},
        {"id": "d", "answerable": False, "outcome": "wrong"},
    ]
    summary = abstention_summary(rows)
    assert summary["answerable"]["right"] == 1 and summary["unanswerable"]["abstained"] == 1
    assert summary["crag_score"] == -0.25  # (1 right - 2 wrong) / 4
    table = three_corpora.abstention_table({"sample": rows})
    assert "| sample | 1 / 0 / 1 / 0 of 2 | 0.0% | 0 / 1 / 1 / 0 of 2 | 50.0% | -25.0% |" in table
