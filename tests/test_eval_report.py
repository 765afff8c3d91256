"""`offline-agent report` over run folders made with the scripted backend: tables, report.md, PNG plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import plain_settings
from test_eval_cli import cli  # noqa: F401  (the fixture)
from test_eval_datasets import write_hotpot
from test_eval_runner import QUESTIONS, options, outputs

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.eval.report import comparison_table, load_run, markdown_table, render_markdown
from offline_agent.eval.results import ResultsError
from offline_agent.eval.runner import EvalOptions, run_evaluation

PNG = b"\x89PNG\r\n\x1a\n"


def needs_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.fail("matplotlib is not installed: pip install -e '.[test]' (the test extra holds the report extra)")


@pytest.fixture
def runs(tmp_path: Path, tiny_corpus: Path) -> list[Path]:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS), encoding="utf-8")
    react, standard = tmp_path / "runs" / "react", tmp_path / "runs" / "standard"
    run_evaluation(
        # the plain engine the script is written for (verify's compare check would refuse q2's wrong answer)
        options(questions, tiny_corpus, react),
        backend=ScriptedBackend(outputs("q1", "q2", "q3")),
    )
    run_evaluation(
        EvalOptions(questions, pool=tiny_corpus, out=standard, settings=agent_settings("standard")),
        backend=ScriptedBackend(["Final: Vistula", "Final: Pierre Curie", "Final: Baltic"]),
    )
    return [react, standard]


def report(cli, *args: str):  # noqa: F811
    return CliRunner().invoke(cli, ["report", *args], prog_name="offline-agent", catch_exceptions=False)


def test_report_with_plots(cli, runs: list[Path], tmp_path: Path) -> None:  # noqa: F811
    needs_matplotlib()
    out = tmp_path / "report"
    result = report(cli, *map(str, runs), "--out", str(out))
    assert result.exit_code == 0, result.output
    table = result.stdout.splitlines()
    assert table[0].startswith("| Run ") and " EM |" in table[0] and "| s/q p90 |" in table[0]
    assert table[2].startswith("| react ") and table[3].startswith("| standard ")
    assert "| 33.3 |" in table[2] and "| 66.7 |" in table[3]  # EM of each run
    assert f"report: {out / 'report.md'} (4 plots)" in result.stderr
    text = (out / "report.md").read_text()
    for part in [
        "# Evaluation report",
        "## By question type",
        "## Stop reasons",
        "## Runs",
        "## Plots",
        "![em f1 by type](em_f1_by_type.png)",
        "No plot by question level",
    ]:
        assert part in text, part
    assert "## By level" not in text  # the sample-style questions carry no level
    for name in ["em_f1_by_type", "steps_per_question", "seconds_per_question", "format_errors"]:
        assert (out / f"{name}.png").read_bytes().startswith(PNG), name
    assert not (out / "em_f1_by_level.png").exists()
    assert set(json.loads((out / "report.json").read_text())) == {"react", "standard"}


def test_report_with_levels_plots_them(cli, tmp_path: Path) -> None:  # noqa: F811
    needs_matplotlib()
    run = tmp_path / "hotpot-run"
    run_evaluation(
        EvalOptions(write_hotpot(tmp_path / "h.json"), out=run, **plain_settings()),
        backend=ScriptedBackend(["Thought: x\nFinal: Lunne", "Thought: x\nFinal: Orvik Bridge"]),
    )
    result = report(cli, str(run), "--out", str(tmp_path / "report"))
    assert result.exit_code == 0 and (tmp_path / "report" / "em_f1_by_level.png").read_bytes().startswith(PNG)
    assert "## By level" in (tmp_path / "report" / "report.md").read_text()


def test_report_without_plots(cli, runs: list[Path], tmp_path: Path) -> None:  # noqa: F811
    result = report(cli, *map(str, runs), "--out", str(tmp_path / "report"), "--no-plots", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["react"]["questions"] == 3
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["report.json", "report.md"]


def test_report_without_matplotlib_is_written_without_plots(cli, runs, tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    """Right after `make run` (the product alone, no report extra), `report` still writes its report."""
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    out, html = tmp_path / "report", tmp_path / "report.html"
    result = report(cli, *map(str, runs), "--out", str(out), "--html", str(html))
    assert result.exit_code == 0 and "Traceback" not in result.output
    hint = (
        "matplotlib is not installed: writing the report without plots (pip install 'offline-agent[report]' adds them)"
    )
    assert result.stderr.splitlines()[0] == hint
    assert result.stdout.splitlines()[2].startswith("| react ")  # the table, as with plots
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md"]
    assert (
        "# Evaluation report" in (out / "report.md").read_text() and "## Plots" not in (out / "report.md").read_text()
    )
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_not_a_run_folder(cli, tmp_path: Path) -> None:  # noqa: F811
    result = report(cli, str(tmp_path), "--no-plots")
    assert result.exit_code == 1 and result.stderr.startswith("error: not a run folder: ")
    result = report(cli, str(tmp_path / "missing"), "--no-plots")
    assert result.stderr.strip() == f"error: run folder not found: {tmp_path / 'missing'}"


def test_report_reads_a_torn_file_without_changing_it(runs: list[Path]) -> None:
    results = runs[0] / "results.jsonl"
    torn = results.read_bytes() + b'{"id": "q4", "em"'
    results.write_bytes(torn)
    assert load_run(runs[0]).summary["questions"] == 3
    assert results.read_bytes() == torn


def test_same_folder_names_are_told_apart(runs: list[Path], tmp_path: Path) -> None:
    from offline_agent.eval.report import unique_names

    copy = tmp_path / "elsewhere" / "react"
    copy.parent.mkdir()
    copy.mkdir()
    for name in ("config.json", "results.jsonl"):
        (copy / name).write_bytes((runs[0] / name).read_bytes())
    named = unique_names([load_run(runs[0]), load_run(copy)])
    assert [run.name for run in named] == [str(runs[0]), str(copy)]
    header, rows = comparison_table(named)
    assert "## Runs" in render_markdown(named, [])


def test_empty_run_folder(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ResultsError, match="has no results yet"):
        load_run(tmp_path)


def test_markdown_table_alignment() -> None:
    text = markdown_table(["Run", "EM"], [["a", "5.0"], ["longer", "n/a"]])
    assert text.splitlines() == ["| Run    |  EM |", "|--------|----:|", "| a      | 5.0 |", "| longer | n/a |"]
