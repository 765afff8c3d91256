"""`offline-agent eval` as a user runs it: in-process with the scripted backend, and once for real (SmolLM2-135M)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import plain_flags
from test_eval_runner import QUESTIONS, ROOT, SCRIPT, outputs

from offline_agent.backends import ScriptedBackend


@pytest.fixture
def cli():
    from offline_agent.cli import _register, cli
    from offline_agent.cli.eval import COMMANDS

    _register()
    for command in COMMANDS:  # harmless once _register() lists the eval module itself
        cli.add_command(command)
    return cli


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS), encoding="utf-8")
    return path


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch):
    """Make the CLI's model loading return a scripted backend; returns the function that queues its outputs."""
    backend = ScriptedBackend()
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    return backend


def invoke(cli, *args: str):
    return CliRunner().invoke(cli, list(args), prog_name="offline-agent", catch_exceptions=False)


def one_line_error(result, needle: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0], result.stderr


def test_help_lists_the_options(cli) -> None:
    text = invoke(cli, "eval", "-h").stdout
    for option in [
        "DATASET",
        "--model",
        "--agent",
        "act|cot|critic|knowagent",
        "--profile",
        "KEY=VALUE",
        "--setting",
        "distractor|pooled",
        "--pool",
        "--grammar",
        "--limit",
        "--seed",
        "--out",
        "OFFLINE_AGENT_MODEL",
        "resume",
    ]:
        assert option in text, option
    assert "matplotlib" in invoke(cli, "report", "-h").stdout


def test_run_then_resume(cli, questions: Path, tiny_corpus: Path, tmp_path: Path, scripted) -> None:
    out = tmp_path / "run"
    scripted.enqueue(*outputs("q1", "q2"))
    # the plain engine the SCRIPT is written for (verify's compare check would refuse q2's wrong answer)
    flags = plain_flags()
    first = invoke(cli, "eval", str(questions), "--pool", str(tiny_corpus), "--limit", "2", "--out", str(out), *flags)
    assert first.exit_code == 0, first.output
    assert "run folder: " in first.stderr and "new: 2 questions" in first.stderr
    assert "[1/2] q1  EM 1  F1 1.00  3 steps" in first.stderr and "running EM 50.0  F1 75.0" in first.stderr
    assert first.stdout.startswith("questions 2  EM 50.0  F1 75.0  support recall 100.0")
    assert "stop reasons: final 2" in first.stdout

    scripted.enqueue(*SCRIPT["q3"])
    again = invoke(cli, "eval", str(questions), "--pool", str(tiny_corpus), "--out", str(out), "--json", "-q", *flags)
    assert again.exit_code == 0 and again.stderr == ""
    summary = json.loads(again.stdout)
    assert summary["questions"] == 3 and summary["format"]["format_error_runs"] == 1


def test_pool_takes_an_index_name_as_ask_corpus_does(
    cli, questions: Path, tiny_corpus: Path, tmp_path: Path, scripted, isolated_home: Path, monkeypatch
) -> None:
    """`eval --pool NAME` opens the index built with `index ... --name NAME`, as `ask --corpus NAME` does."""
    assert invoke(cli, "index", str(tiny_corpus), "--name", "tinydocs").exit_code == 0
    monkeypatch.chdir(tmp_path)  # no folder called tinydocs here: the name can only be the index's
    runs = {}
    for label, pool in (("by-name", "tinydocs"), ("by-folder", str(tiny_corpus))):
        scripted.enqueue(*outputs("q1"))
        out = tmp_path / label
        result = invoke(cli, "eval", str(questions), "--pool", pool, "--limit", "1", "--out", str(out), *plain_flags())
        assert result.exit_code == 0, result.output
        assert f"corpus: pool:{pool} (4 passages)" in result.stderr
        assert result.stdout.startswith("questions 1  EM 100.0")
        runs[label] = json.loads((out / "config.json").read_text())["corpus"]
    assert runs["by-name"]["sha256"] == runs["by-folder"]["sha256"]  # the same passages either way
    missing = invoke(cli, "eval", str(questions), "--pool", "no-such-index", "--out", str(tmp_path / "x"))
    one_line_error(missing, "corpus not found: no-such-index")


def test_a_model_failing_mid_run(cli, questions: Path, tiny_corpus: Path, tmp_path: Path, scripted) -> None:
    scripted.enqueue(*outputs("q1"))
    result = invoke(cli, "eval", str(questions), "--pool", str(tiny_corpus), "--out", str(tmp_path / "run"))
    one_line_error(result, "stopped after 1 of 3 questions")
    assert "rerun the same command to resume" in result.stderr
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 1


def test_another_config_in_the_same_folder(cli, questions: Path, tiny_corpus: Path, tmp_path: Path, scripted) -> None:
    scripted.enqueue(*outputs("q1"))
    args = ["eval", str(questions), "--pool", str(tiny_corpus), "--out", str(tmp_path / "run"), "--limit", "1"]
    assert invoke(cli, *args, *plain_flags()).exit_code == 0
    one_line_error(
        invoke(cli, *args, *plain_flags(), "--agent", "act"), "another configuration (agent: 'react' there, 'act' now"
    )


@pytest.mark.parametrize(
    ("content", "extra", "needle"),
    [
        ("{not json\n", [], "line 1 is not valid JSON"),
        ('{"id": "a", "question": "q"}\n', [], "(id 'a') has no answer"),
        (
            '{"id": "a", "question": "q", "answer": "x"}\n{"id": "a", "question": "q", "answer": "x"}\n',
            [],
            "duplicate id 'a'",
        ),
        ('{"id": "a", "question": "q", "answer": "x"}\n', ["--setting", "distractor"], "needs each question's context"),
    ],
)
def test_bad_input_is_one_line(cli, tmp_path: Path, tiny_corpus: Path, content: str, extra, needle: str) -> None:
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text(content, encoding="utf-8")
    pool = [] if "--setting" in extra else ["--pool", str(tiny_corpus)]
    result = invoke(cli, "eval", str(dataset), *pool, "--out", str(tmp_path / "run"), *extra)
    one_line_error(result, needle)
    assert not (tmp_path / "run").exists()


def test_full_disk_through_the_cli(cli, questions: Path, tiny_corpus: Path, tmp_path: Path, scripted, monkeypatch):
    import errno
    import os

    scripted.enqueue(*outputs("q1"))

    def no_space(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", no_space)
    result = invoke(cli, "eval", str(questions), "--pool", str(tiny_corpus), "--out", str(tmp_path / "run"))
    monkeypatch.undo()
    one_line_error(result, "No space left on device; the file is intact")
    assert (tmp_path / "run" / "results.jsonl").read_bytes() == b""


@pytest.mark.model
def test_model_eval_on_the_sample_questions(tmp_path: Path, isolated_home: Path, small_model_path: Path) -> None:
    """The real command with SmolLM2-135M on two sample questions; a rerun resumes with nothing left to do."""
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "offline_agent.cli",
        "eval",
        str(ROOT / "corpora/sample/questions.jsonl"),
        "--model",
        "smollm2-135m-instruct",
        "--limit",
        "2",
        "--out",
        str(out),
    ]
    env = {key: value for key, value in os.environ.items() if key != "OFFLINE_AGENT_MODEL"}
    env["OFFLINE_AGENT_HOME"] = str(isolated_home)
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stdout.startswith("questions 2  EM ")
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["name"] == "smollm2-135m-instruct" and len(config["model"]["sha256"]) == 64
    assert config["setting"] == "pooled" and config["grammar"] == "on" and config["corpus"]["passages"] > 200
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["s001", "s002"]
    for row in rows:
        assert row["trajectory"]["steps"] and row["stop_reason"] in ("final", "max_steps", "timeout", "error")
        assert row["rejected_steps"] == 0 or row["trajectory"]["steps"][-1]["finish_reason"] == "length"
        assert 0.0 <= row["f1"] <= 1.0 and row["support_recall"] is not None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["questions"] == 2 and summary["tokens"]["generated"] > 0
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert again.returncode == 0 and "resuming: 2 done, 0 to go" in again.stderr
    assert (out / "results.jsonl").read_text().count("\n") == 2
