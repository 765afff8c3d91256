"""Run folders written before strategies declared their own options still resume and compare.

tests/golden/old_run_folders holds two folders made by the code before the options model (commit 8bd53cb, with
the scripted backend: `eval questions.jsonl --pool pool.jsonl --limit 1`, with `--agent react` and with the
default strategy, verify). Their config.json records every setting of every strategy in one flat agent_config
and no profile. Today's `eval` must resume them with the same command (the answer profile is what ran then), a
changed setting must still be refused by name, and `report` must read them beside a folder written today.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_eval_cli import cli, scripted  # noqa: F401  (the fixtures)

from offline_agent.agents import agent_settings
from offline_agent.eval.results import with_added_fields

OLD = Path(__file__).resolve().parent / "golden" / "old_run_folders"
SCRIPT = [
    "Thought: The Vistula.\nAction: search[Vistula]",
    "Thought: The sea.\nFinal: the Baltic Sea",
]


@pytest.fixture
def old(tmp_path: Path) -> Path:
    copy = tmp_path / "old"
    shutil.copytree(OLD, copy)
    return copy


def eval_args(old: Path, folder: str, *extra: str) -> list[str]:
    dataset, pool = old / "questions.jsonl", old / "pool.jsonl"
    return ["eval", str(dataset), "--pool", str(pool), "--out", str(old / folder), "--limit", "2", *extra]


# Defaults of the answer profile changed since the folders were written; they resume with the old value given.
CHANGED_DEFAULTS = (
    *("-o", "section_sentences_after=0", "-o", "section_sentences=0", "-o", "section_defaults=false"),
    *("-o", "search_with_question=false"),
)


@pytest.mark.parametrize(("folder", "extra"), [("react", ("--agent", "react")), ("verify", ())])
def test_an_old_folder_resumes_with_the_same_command(cli, scripted, old: Path, folder, extra) -> None:  # noqa: F811
    before = json.loads((old / folder / "config.json").read_text())
    assert "profile" not in before and len(before["agent_config"]) == 28  # every strategy's settings, flat
    scripted.enqueue(*SCRIPT)
    result = CliRunner().invoke(cli, eval_args(old, folder, *extra, *CHANGED_DEFAULTS), prog_name="offline-agent")
    assert result.exit_code == 0, result.output
    assert "resuming: 1 done, 1 to go" in result.stderr
    rows = [json.loads(line) for line in (old / folder / "results.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["q1", "q2"] and rows[1]["em"] == 1.0
    assert rows[1]["trajectory"]["profile"] == "answer"
    assert json.loads((old / folder / "config.json").read_text()) == before  # the folder's record stays as it was


def test_the_old_flat_settings_are_the_answer_profiles(old: Path) -> None:
    """What the old folders record equals today's resolved settings wherever the strategy has the setting; the
    settings it lacks (verify's checks for react, knowagent's graph for both) are the ones it never read."""
    for folder, agent in (("react", "react"), ("verify", "verify")):
        # a setting added since the folder was written reads as the value that reproduces its runs (ADDED_FIELDS)
        recorded = with_added_fields(json.loads((old / folder / "config.json").read_text()))["agent_config"]
        changed = {
            "section_sentences_after": 0,
            "section_sentences": 0,
            "section_defaults": False,
            "search_with_question": False,
        }
        now = agent_settings(agent, **changed).flat()  # changed since (above)
        assert {key: recorded[key] for key in now} == now
        assert set(recorded) - set(now) == (
            {"exclude_refused", "search_after_refusal", "read_hop", "without", "action_graph"}
            if agent == "react"
            else {"action_graph"}
        )


def test_a_changed_default_is_named_when_an_old_folder_is_resumed_without_it(cli, scripted, old: Path) -> None:  # noqa: F811
    result = CliRunner().invoke(cli, eval_args(old, "verify"), prog_name="offline-agent")
    assert result.exit_code == 1
    assert "agent_config.section_sentences: 0 there, 3 now" in result.stderr


def test_an_old_folder_still_refuses_another_configuration(cli, scripted, old: Path) -> None:  # noqa: F811
    result = CliRunner().invoke(cli, eval_args(old, "react", "--profile", "plain"), prog_name="offline-agent")
    assert result.exit_code == 1
    assert "another configuration (agent: 'verify' there, 'react' now" not in result.stderr
    assert "agent_config.answer_form: True there, False now" in result.stderr
    result = CliRunner().invoke(cli, eval_args(old, "verify", "-o", "read_hop=false"), prog_name="offline-agent")
    assert result.exit_code == 1 and "agent_config.read_hop: True there, False now" in result.stderr


def test_report_compares_old_and_new_folders(cli, scripted, old: Path, tmp_path: Path) -> None:  # noqa: F811
    new = tmp_path / "new"
    args = ["eval", str(old / "questions.jsonl"), "--pool", str(old / "pool.jsonl"), "--out", str(new), "--limit", "1"]
    scripted.enqueue("Thought: x\nAction: search[Marie Curie]", "Thought: y\nFinal: Vistula")
    assert CliRunner().invoke(cli, [*args, "--agent", "react", "-q"]).exit_code == 0
    config = json.loads((new / "config.json").read_text())
    assert config["profile"] == "answer" and config["strategy_options"] == agent_settings("react").options.to_dict()
    out = tmp_path / "report"
    folders = [str(old / "react"), str(old / "verify"), str(new)]
    result = CliRunner().invoke(cli, ["report", *folders, "--no-plots", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [[cell.strip() for cell in line.split("|")[1:3]] for line in result.stdout.splitlines()[2:]]
    assert rows == [["react", "react"], ["verify", "verify"], ["new", "react"]]
    markdown = (out / "report.md").read_text()
    assert "`new` (" in markdown and "agent react, profile answer," in markdown and "agent verify, model" in markdown
