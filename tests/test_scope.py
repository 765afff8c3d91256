"""Knowing when not to answer (agents/scope.py): the vocabulary rule, the model call, the refusal, and where a
scope comes from (--scope, an index's scope.txt, the sample corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from offline_agent.agents import RunConfig
from offline_agent.agents.scope import check_scope, read_scope, refusal
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.cli import _register, cli
from offline_agent.errors import ConfigError
from offline_agent.runner import Session, corpus_scope, save_scope

_register()

SCOPE = "Biographies of scientists and the cities they lived in."


def test_a_question_of_known_words_is_in_scope_by_rule(tiny_index) -> None:
    backend = ScriptedBackend()
    verdict = check_scope("Where was Marie Curie born?", SCOPE, tiny_index, backend)
    assert verdict.in_scope and verdict.decided_by == "rule" and backend.calls == []


def test_a_question_of_unknown_words_is_out_of_scope_by_rule(tiny_index) -> None:
    verdict = check_scope("How do I bake sourdough bread?", SCOPE, tiny_index, ScriptedBackend())
    assert not verdict.in_scope and verdict.decided_by == "rule"


def test_a_question_mostly_of_unknown_words_that_never_meet_is_out_of_scope_by_rule(tiny_index) -> None:
    backend = ScriptedBackend()  # nothing queued: a model call would fail the test
    verdict = check_scope("Which pharmacy in Warsaw is open on Sunday?", SCOPE, tiny_index, backend)
    assert not verdict.in_scope and verdict.decided_by == "rule"
    assert verdict.record.details.scope.rule == {"terms": 4, "known": 1, "verdict": False, "best_overlap": 1}


def test_an_unsure_rule_asks_the_model_yes_or_no(tiny_index) -> None:
    question = "Which pharmacy near the Vistula in Warsaw is open?"  # half its words known, and they meet
    backend = ScriptedBackend(["no"])
    verdict = check_scope(question, SCOPE, tiny_index, backend)
    assert verdict.decided_by == "model" and not verdict.in_scope
    assert backend.calls[0].grammar == 'root ::= "yes" | "no"\n' and SCOPE in backend.calls[0].prompt
    yes = check_scope(question, SCOPE, tiny_index, ScriptedBackend(["yes"]))
    assert yes.in_scope


def test_an_out_of_scope_question_is_refused_before_any_search(tiny_index) -> None:
    backend = ScriptedBackend()  # nothing queued: any model call would fail the test
    session = Session(backend=backend, index=tiny_index, corpus="tiny")
    trajectory = session.ask("How do I bake sourdough bread?", RunConfig(scope=SCOPE))
    assert trajectory.stop_reason == "out_of_scope"
    assert trajectory.answer == refusal(SCOPE) and "Biographies of scientists" in trajectory.answer
    assert len(trajectory.steps) == 1 and trajectory.steps[0].action is None
    assert trajectory.scope["in_scope"] is False and trajectory.scope["decided_by"] == "rule"


def test_an_in_scope_question_runs_as_usual_and_records_the_check(tiny_index) -> None:
    session = Session(backend=ScriptedBackend(["Thought: x\nFinal: Warsaw"]), index=tiny_index, corpus="tiny")
    trajectory = session.ask("Where was Marie Curie born?", RunConfig(scope=SCOPE))
    assert trajectory.answer == "Warsaw" and trajectory.scope["in_scope"] is True


def test_scope_text_or_file(tmp_path: Path) -> None:
    assert read_scope(None) is None and read_scope("  ") is None
    assert read_scope("Ships and  harbours.\n") == "Ships and harbours."
    path = tmp_path / "scope.txt"
    path.write_text("Company memos\nfrom 2024.\n", encoding="utf-8")
    assert read_scope(str(path)) == "Company memos from 2024."
    path.write_text("   ", encoding="utf-8")
    with pytest.raises(ConfigError, match="empty"):
        read_scope(str(path))


def test_the_sample_corpus_and_an_index_carry_their_scope(tmp_path: Path, tiny_index) -> None:
    assert "encyclopedia" in (corpus_scope(None) or "")
    folder = tmp_path / "idx"
    tiny_index.save(folder)
    assert corpus_scope(folder) is None
    save_scope(folder, SCOPE)
    assert corpus_scope(folder) == SCOPE


def test_index_build_keeps_the_scope_and_an_update_keeps_it(tiny_corpus: Path, isolated_home: Path) -> None:
    result = CliRunner().invoke(cli, ["index", str(tiny_corpus), "--name", "sci", "--scope", SCOPE])
    assert result.exit_code == 0, result.output
    assert corpus_scope("sci") == SCOPE
    result = CliRunner().invoke(cli, ["index", str(tiny_corpus), "--name", "sci", "--update"])
    assert result.exit_code == 0, result.output
    assert corpus_scope("sci") == SCOPE


def test_a_scope_that_cannot_be_written_is_one_error_and_leaves_no_temporary(tmp_path: Path, monkeypatch) -> None:
    import errno
    import os

    from offline_agent.errors import RetrievalError

    folder = tmp_path / "index"
    folder.mkdir()
    save_scope(folder, SCOPE)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(RetrievalError, match="scope could not be written .*No space left on device"):
        save_scope(folder, "another scope")
    assert sorted(p.name for p in folder.iterdir()) == ["scope.txt"]
    assert read_scope(str(folder / "scope.txt")) == SCOPE  # the previous scope is kept
