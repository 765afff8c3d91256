"""`offline-agent chat` in-process with the scripted backend (no model): turns, commands, Ctrl-C, trace, options."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import plain_flags

from offline_agent.agents import RunConfig
from offline_agent.backends import ScriptedBackend
from offline_agent.cli.chat import ChatLoop
from offline_agent.runner import Session
from offline_agent.steps import Trajectory, Turn

FIRST = "Where was Marie Curie born?"
SECOND = "Which river flows through it?"


@pytest.fixture
def cli():
    from offline_agent.cli import _register, cli

    _register()
    return cli


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedBackend:
    """Make the CLI's model loading return a scripted backend, whose outputs the test queues."""
    backend = ScriptedBackend()
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    return backend


def chat(cli, tiny_corpus: Path, text: str, *args: str):
    return CliRunner().invoke(
        cli,
        ["chat", "--corpus", str(tiny_corpus), *plain_flags(), *args],
        input=text,
        prog_name="offline-agent",
        catch_exceptions=False,
    )


def test_two_questions_history_reset_and_end_of_input(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    scripted.enqueue(
        "Thought: a\nAction: search[Marie Curie]",
        "Thought: b\nFinal: Warsaw",
        "Thought: c\nFinal: Vistula",
        "Thought: d\nFinal: Paris",
    )
    text = f"{FIRST}\n\n{SECOND}\n/history\n/reset\n/history\nWhere was Pierre Curie born?\n"
    result = chat(cli, tiny_corpus, text)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["Warsaw", "Vistula", "Paris"]
    prompts = [call.prompt for call in scripted.calls]
    assert f"Question: {FIRST}" in prompts[0] and "Earlier in this conversation" not in prompts[0]
    assert f"Question: {FIRST}\nAnswer: Warsaw\n\nQuestion: {SECOND}" in prompts[2]
    assert "Earlier in this conversation" not in prompts[3]  # after /reset
    stderr = result.stderr
    assert f"1. {FIRST}\n   -> Warsaw\n2. {SECOND}\n   -> Vistula\n" in stderr
    assert "history cleared (2 turns forgotten)" in stderr and "(no turns yet)" in stderr
    # the live view, as in ask: steps, the tool as it runs, the stop line
    assert "── step 1" in stderr and "… running search[Marie Curie]" in stderr and "stop: final" in stderr
    assert not any(line.startswith("> ") for line in stderr.splitlines())  # not a terminal: no prompt


def test_quit_stops_reading(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    scripted.enqueue("Thought: b\nFinal: Warsaw")
    result = chat(cli, tiny_corpus, f"{FIRST}\n/quit\n{SECOND}\n")
    assert result.exit_code == 0 and result.stdout == "Warsaw\n"
    assert len(scripted.calls) == 1


def test_no_answer_is_an_empty_line_and_the_chat_goes_on(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    scripted.enqueue("Thought: a\nAction: google[x]\n", "Thought: b\nFinal: Vistula")
    result = chat(cli, tiny_corpus, f"{FIRST}\n{SECOND}\n/history\n", "--quiet")
    assert result.exit_code == 0
    assert result.stdout == "\nVistula\n"
    assert "no answer (stop reason error" in result.stderr and "-> (no answer)" in result.stderr
    # a turn without an answer is not shown to the model
    assert "Earlier in this conversation" not in scripted.calls[1].prompt


def test_unknown_command(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    result = chat(cli, tiny_corpus, "/help\n")
    assert result.exit_code == 0 and "unknown command /help; use one of /history, /reset, /quit" in result.stderr


def test_trace_and_json_record_each_turn(cli, tiny_corpus: Path, scripted: ScriptedBackend, tmp_path: Path) -> None:
    scripted.enqueue("Thought: b\nFinal: Warsaw", "Thought: c\nFinal: Vistula")
    trace = tmp_path / "trace.jsonl"
    result = chat(cli, tiny_corpus, f"{FIRST}\n{SECOND}\n", "--json", "--trace", str(trace), "-q")
    assert result.exit_code == 0
    printed = [Trajectory.from_json(line) for line in result.stdout.splitlines()]
    traced = [Trajectory.from_json(line) for line in trace.read_text().splitlines()]
    assert printed == traced and [t.answer for t in traced] == ["Warsaw", "Vistula"]
    assert traced[0].history == [] and traced[1].history == [Turn(FIRST, "Warsaw")]
    assert traced[1].corpus == str(tiny_corpus)


def test_controls_reach_the_agent(cli, tiny_corpus: Path, scripted: ScriptedBackend, tmp_path: Path) -> None:
    scripted.enqueue("Thought: a\nAction: search[Warsaw]", "Thought: b\nAction: search[Poland]")
    trace = tmp_path / "trace.jsonl"
    args = ["--max-steps", "2", "--early-stopping", "force", "--no-budget-hint", "--trace", str(trace), "-q"]
    result = chat(cli, tiny_corpus, f"{FIRST}\n", *args)
    assert result.exit_code == 0 and result.stdout == "\n"
    trajectory = Trajectory.from_json(trace.read_text())
    assert trajectory.stop_reason == "max_steps" and trajectory.early_stopping == "force"
    assert trajectory.budget_hint is False and "steps left" not in scripted.calls[1].prompt


class InterruptOnce(ScriptedBackend):
    """Raises KeyboardInterrupt (Ctrl-C) on its first call, then replays its queue."""

    def complete(self, prompt, **kwargs):
        if not self.calls:
            self.calls.append(None)
            raise KeyboardInterrupt
        return super().complete(prompt, **kwargs)


def test_ctrl_c_during_a_question_abandons_it_only(tiny_index, capsys) -> None:
    backend = InterruptOnce(["Thought: c\nFinal: Vistula"])
    loop = ChatLoop(Session(backend=backend, index=tiny_index, corpus="tiny"), RunConfig(), quiet=True)
    loop.run(io.StringIO(f"{FIRST}\n{SECOND}\n"), interactive=False)
    out, err = capsys.readouterr()
    assert out == "Vistula\n" and "interrupted: question abandoned" in err
    assert loop.history == [Turn(SECOND, "Vistula")]
    assert "Earlier in this conversation" not in backend.calls[1].prompt


class CtrlCAtPrompt(io.StringIO):
    def readline(self, *args):
        raise KeyboardInterrupt


def test_ctrl_c_at_the_prompt_ends_the_chat_cleanly(tiny_index, capsys) -> None:
    loop = ChatLoop(Session(backend=ScriptedBackend(), index=tiny_index, corpus="tiny"), RunConfig())
    loop.run(CtrlCAtPrompt(), interactive=True)  # returns: no exception, no traceback
    assert capsys.readouterr().err.startswith("> ")


def test_a_terminal_gets_a_prompt_on_stderr(tiny_index, capsys) -> None:
    backend = ScriptedBackend(["Thought: b\nFinal: Warsaw"])
    loop = ChatLoop(Session(backend=backend, index=tiny_index, corpus="tiny"), RunConfig(), quiet=True)
    loop.run(io.StringIO(f"{FIRST}\n"), interactive=True)
    out, err = capsys.readouterr()
    assert out == "Warsaw\n" and err.count("> ") == 2


def test_help_lists_the_options_and_commands(cli) -> None:
    text = CliRunner().invoke(cli, ["chat", "-h"], prog_name="offline-agent").stdout
    for needle in [
        "--corpus",
        "--model",
        "--agent",
        "--threads",
        "--grammar-engine",
        "--early-stopping",
        "--budget-hint",
        "--trace",
        "--json",
        "/history",
        "/reset",
        "/quit",
        "OFFLINE_AGENT_MODEL",
    ]:
        assert needle in text, needle


@pytest.mark.parametrize("command", ["ask", "eval"])
def test_ask_and_eval_take_the_controls(cli, command: str) -> None:
    text = CliRunner().invoke(cli, [command, "-h"], prog_name="offline-agent").stdout
    assert "--early-stopping [generate|force]" in text and "--budget-hint / --no-budget-hint" in text


def test_ask_passes_the_controls(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    scripted.enqueue("Thought: a\nAction: search[Warsaw]", "Thought: b\nAction: search[Poland]")
    args = ["ask", FIRST, "--corpus", str(tiny_corpus), "--max-steps", "2", "--early-stopping", "force", "--json"]
    result = CliRunner().invoke(cli, [*args, "--budget-hint"], prog_name="offline-agent")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["stop_reason"] == "max_steps" and data["early_stopping"] == "force" and data["budget_hint"] is True
    assert "… running search[Poland]" in result.stderr


def test_eval_records_the_controls_in_config_json(cli, tiny_corpus: Path, scripted, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": FIRST, "answer": "Warsaw"}) + "\n", encoding="utf-8")
    scripted.enqueue("Thought: b\nFinal: Warsaw")
    out = tmp_path / "run"
    args = ["eval", str(questions), "--pool", str(tiny_corpus), "--out", str(out), "--no-budget-hint", "-q"]
    result = CliRunner().invoke(cli, [*args, "--early-stopping", "force"], prog_name="offline-agent")
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["agent_config"]["budget_hint"] is False and config["agent_config"]["early_stopping"] == "force"
    assert config["options"]["settings"]["config"]["budget_hint"] is False and config["profile"] == "answer"
    # the same folder with other controls is refused, naming the field
    again = CliRunner().invoke(cli, args, prog_name="offline-agent")
    assert again.exit_code == 1 and "agent_config.early_stopping: 'force' there, 'generate' now" in again.stderr


def test_a_run_folder_from_before_the_controls_resumes_as_it_was(cli, tiny_corpus: Path, scripted, tmp_path):
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": f"q{n}", "question": FIRST, "answer": "Warsaw"} for n in (1, 2)]
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "run"
    args = ["eval", str(questions), "--pool", str(tiny_corpus), "--out", str(out), "-q"]
    scripted.enqueue("Thought: b\nFinal: Warsaw")
    assert CliRunner().invoke(cli, [*args, "--limit", "1"]).exit_code == 0
    # make config.json look as it did before the controls existed
    config = json.loads((out / "config.json").read_text())
    for key in ("early_stopping", "budget_hint"):
        del config["agent_config"][key]
        del config["options"]["settings"]["config"][key]
    (out / "config.json").write_text(json.dumps(config))
    refused = CliRunner().invoke(cli, [*args, "--budget-hint"])
    assert refused.exit_code == 1 and "agent_config.budget_hint: False there, True now" in refused.stderr
    scripted.enqueue("Thought: b\nFinal: Warsaw")
    resumed = CliRunner().invoke(cli, args)
    assert resumed.exit_code == 0, resumed.output
    assert len((out / "results.jsonl").read_text().splitlines()) == 2


def test_ask_that_abstains_says_so_shows_the_nearest_passages_and_exits_6(cli, tiny_corpus: Path, scripted) -> None:
    from offline_agent.grammar import ABSTAIN

    scripted.enqueue("Thought: a\nAction: search[Marie Curie cat]", f"Thought: b\nFinal: {ABSTAIN}")
    args = ["ask", "What was the name of Marie Curie's cat?", "--corpus", str(tiny_corpus), *plain_flags()]
    result = CliRunner().invoke(cli, args, prog_name="offline-agent")
    assert result.exit_code == 6
    lines = result.stdout.splitlines()
    assert lines[0] == "The documents do not say." and "Nearest passages found:" in result.stdout
    assert ABSTAIN not in result.stdout
    scripted.enqueue("Thought: a\nAction: search[Marie Curie cat]", f"Thought: b\nFinal: {ABSTAIN}")
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"], prog_name="offline-agent").stdout)
    assert data["abstained"] is True and data["answer"] is None and data["stop_reason"] == "abstained"
    assert data["sources"]


def test_chat_prints_the_abstention_as_its_answer(cli, tiny_corpus: Path, scripted: ScriptedBackend) -> None:
    from offline_agent.grammar import ABSTAIN

    scripted.enqueue(f"Thought: b\nFinal: {ABSTAIN}")
    result = chat(cli, tiny_corpus, "What was the name of Marie Curie's cat?\n")
    assert result.stdout.splitlines()[0].endswith("The documents do not say.")
