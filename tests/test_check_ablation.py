"""benchmarks/answers/check_ablation.py on a real run folder (a scripted model's `eval` run with the verify strategy
over a real index): leaving out the check that refused a Final reaches that question and no other check does; a rerun
spliced over the set gives the row that says what the check was worth; an unknown key is a usage error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from test_check_replay import verify_run
from test_eval_runner import ROOT


def ablation(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchmarks.answers.check_ablation", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=check, cwd=ROOT)


def test_the_check_left_out_reaches_the_question_it_refused_and_its_rerun_is_its_row(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    base, out = tmp_path / "base", tmp_path / "out"
    (tmp_path / "made").mkdir()
    base.mkdir()
    # q1: "Marie Curie" refused as in_question, then "Vistula" (right).
    verify_run(tiny_corpus, tmp_path / "made").rename(base / "sample")

    from benchmarks.answers import check_ablation

    assert check_ablation.reached(base, "in_question") == {"q1"}
    assert check_ablation.reached(base, "sides") == set()  # no yes/no or choice question to weigh

    # q1 run again without in_question: "Marie Curie" then stands (here the base run's row, with that answer).
    rerun = out / "in_question" / "sample"
    shutil.copytree(base / "sample", rerun)
    row = json.loads((rerun / "results.jsonl").read_text())
    row.update(prediction="Marie Curie", em=0.0, f1=0.0)
    (rerun / "results.jsonl").write_text(json.dumps(row) + "\n")

    table = ablation(base, out, "--only", "in_question,sides", "--table", "--show").stdout.splitlines()
    assert table[0] == "| left out | questions reached | sample EM | right, all 1 | prompt tokens, sample |"
    assert table[2].startswith("| nothing | 0 | 100.0 (+0 -0) | 1 |")
    assert table[3].startswith("| in_question | 1 | 0.0 (+0 -1) | 0 |")
    assert table[4] == "    sample q1: 'Vistula' -> 'Marie Curie' (gold 'Vistula')"
    assert table[5].startswith("| sides | 0 | 100.0 (+0 -0) | 1 |")


def test_an_unknown_key_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "base" / "sample").mkdir(parents=True)
    done = ablation(tmp_path / "base", tmp_path / "out", "--only", "in_questions", check=False)
    assert done.returncode == 2
    assert "error: no check or rewrite named in_questions; choose from unread, one_side," in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_base_with_no_run_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = ablation(tmp_path, tmp_path / "out", check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(
        f"error: {tmp_path}: no run folder of a set in it (deva, devb, pg, sample)"
    )
