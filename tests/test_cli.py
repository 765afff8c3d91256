"""The CLI as a user runs it: a subprocess, one-line errors, meaningful exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, cli_env

GOLDEN = ROOT / "tests" / "golden"


def run(*args: str, home: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(home),
        cwd=cwd,
        timeout=120,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0], result.stderr


@pytest.mark.parametrize("command", [[], ["ask"], ["grammar"], ["grammar", "show"], ["grammar", "check"], ["models"]])
def test_help_everywhere(command: list[str]) -> None:
    result = run(*command, "-h")
    assert result.returncode == 0 and "Usage:" in result.stdout


def test_ask_help_lists_the_documented_options() -> None:
    text = run("ask", "--help").stdout
    for option in [
        "--corpus",
        "--model",
        "--max-steps",
        "--max-seconds",
        "--temperature",
        "--seed",
        "--json",
        "--trace",
        "--gpu-layers",
        "OFFLINE_AGENT_MODEL",
        "OFFLINE_AGENT_GPU_LAYERS",
    ]:
        assert option in text, option


def test_version() -> None:
    from offline_agent import __version__

    assert run("--version").stdout.strip().endswith(__version__)


def test_empty_question_is_a_usage_error(isolated_home: Path) -> None:
    result = run("ask", "   ", home=isolated_home)
    assert result.returncode == 2 and "the question is empty" in result.stderr and "Traceback" not in result.stderr


def test_unknown_model_name(isolated_home: Path) -> None:
    result = run("ask", "Who?", "--model", "no-such-model", home=isolated_home)
    assert_one_line_error(result, "unknown model 'no-such-model'")
    assert "qwen2.5-coder-1.5b-instruct" in result.stderr


def test_missing_model_file(isolated_home: Path, tmp_path: Path) -> None:
    result = run("ask", "Who?", "--model", str(tmp_path / "missing.gguf"), home=isolated_home)
    assert_one_line_error(result, "model file not found")


def test_non_gguf_model_file(isolated_home: Path, tmp_path: Path) -> None:
    fake = tmp_path / "notes.txt"
    fake.write_text("this is not a model")
    assert_one_line_error(run("ask", "Who?", "--model", str(fake), home=isolated_home), "not a GGUF file")


def test_missing_corpus(isolated_home: Path, tmp_path: Path) -> None:
    result = run("ask", "Who?", "--corpus", str(tmp_path / "nowhere"), home=isolated_home)
    assert_one_line_error(result, "corpus not found")


def test_empty_corpus(isolated_home: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "blank.txt").write_text("")
    assert_one_line_error(run("ask", "Who?", "--corpus", str(tmp_path / "empty"), home=isolated_home), "empty")


def test_bad_environment_value(isolated_home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", "ask", "Who?"],
        capture_output=True,
        text=True,
        env={**cli_env(isolated_home), "OFFLINE_AGENT_GPU_LAYERS": "many"},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_bad_option_value_is_a_usage_error() -> None:
    result = run("ask", "Who?", "--max-steps", "0")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_grammar_show_matches_the_shipped_files() -> None:
    assert run("grammar", "show", "--format", "gbnf").stdout == (ROOT / "grammars" / "react.gbnf").read_text()
    assert run("grammar", "show", "--format", "lark").stdout == (ROOT / "grammars" / "react.lark").read_text()
    both = run("grammar", "show", "--tools", "search", "--final-only").stdout
    assert "# GBNF" in both and "# Lark" in both and "Action" not in both


def test_grammar_show_unknown_tool() -> None:
    assert_one_line_error(run("grammar", "show", "--tools", "search,google"), "unknown tool 'google'")


def test_grammar_check_valid_files() -> None:
    files = sorted(str(p) for p in (GOLDEN / "valid").glob("*.txt"))
    result = run("grammar", "check", "--gbnf", *files)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(": ok") == len(files)


def test_grammar_check_points_at_the_error(tmp_path: Path) -> None:
    step = tmp_path / "step.txt"
    step.write_text("Thought: I will search.\nAction: google[Ed Wood]\n")
    result = run("grammar", "check", str(step))
    assert result.returncode == 1
    assert f"{step}:2:9: unknown_tool:" in result.stderr and "^" in result.stderr


def test_grammar_check_unreadable_file(tmp_path: Path) -> None:
    result = run("grammar", "check", str(tmp_path / "missing.txt"))
    assert result.returncode == 1 and "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_models_list_json(isolated_home: Path) -> None:
    result = run("models", "list", "--json", home=isolated_home)
    assert result.returncode == 0
    names = {row["name"] for row in json.loads(result.stdout)}
    assert {"qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"} <= names


def test_models_path_unknown(isolated_home: Path) -> None:
    assert_one_line_error(run("models", "path", "nope", home=isolated_home), "unknown model 'nope'")
