"""Abstention: "the documents do not say" is one fixed Final (grammar.ABSTAIN) that every strategy's grammar
allows beside an answer; the run records it as `abstained` with no answer, never as an answer string."""

from __future__ import annotations

import json

import pytest
from support import make_agent

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.grammar import ABSTAIN, GbnfChecker, GrammarSpec, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import StepParser
from offline_agent.runner import Session
from offline_agent.sources import attach_sources, format_sources
from offline_agent.steps import Trajectory
from offline_agent.tools import build_tools

QUESTION = "Which river flows through the city where Marie Curie was born?"


@pytest.mark.parametrize("grounded", [False, True])
def test_the_grammar_allows_the_abstention_beside_an_answer(grounded: bool) -> None:
    spec = GrammarSpec(allow_action=False, grounded=grounded, abstain=True)
    grammar = build_grammar(spec, Grounding(["The Vistula flows through Warsaw."]))
    checker = GbnfChecker(grammar.gbnf)
    assert checker.accepts(f"Thought: nothing read says\nFinal: {ABSTAIN}")
    assert checker.accepts("Thought: read it\nFinal: Warsaw")
    step = StepParser(spec).parse(f"Thought: x\nFinal: {ABSTAIN}\n", Grounding(["Other text."]))
    assert step.final == ABSTAIN


def test_without_the_option_a_grounded_final_may_not_abstain() -> None:
    """The default (and verify's read_off call, which must read an answer off one document)."""
    for spec in (
        GrammarSpec(thought=False, allow_action=False, grounded=True),
        GrammarSpec(thought=False, allow_action=False, grounded=True, abstain=False),
    ):
        checker = GbnfChecker(build_grammar(spec, Grounding(["The Vistula flows through Warsaw."])).gbnf)
        assert checker.accepts("Final: Warsaw") and not checker.accepts(f"Final: {ABSTAIN}")


@pytest.mark.parametrize("agent", ["react", "verify", "rag", "act", "knowagent", "critic", "plan"])
def test_the_option_brings_the_prompt_line_and_its_absence_leaves_the_prompt_as_it_was(tiny_index, agent) -> None:
    def system(abstain: bool) -> str:
        return make_agent(agent, ScriptedBackend(), build_tools(tiny_index), abstain=abstain).prompt_parts("Q?").system

    assert "[not in the documents]" in system(True) or agent == "plan"  # plan's is in its responder's message
    assert "[not in the documents]" not in system(False) and "?abstain" not in system(False)
    assert "?abstain" not in system(True)


@pytest.mark.parametrize("agent", ["react", "verify", "rag", "act", "cot"])
def test_every_loop_strategy_ends_abstained_with_no_answer(tiny_index, agent: str) -> None:
    thought = "" if agent in ("rag", "act") else "Thought: the passages do not say\n"
    backend = ScriptedBackend([f"{thought}Final: {ABSTAIN}"] * 3)
    trajectory = make_agent(agent, backend, build_tools(tiny_index), max_steps=1).run(QUESTION)
    assert trajectory.stop_reason == "abstained" and trajectory.abstained and trajectory.answer is None
    data = json.loads(trajectory.to_json())
    assert data["abstained"] is True and data["answer"] is None
    assert Trajectory.from_json(trajectory.to_json()).abstained


def test_a_session_abstains_and_shows_the_nearest_passages(tiny_index) -> None:
    session = Session.from_settings(
        agent_settings("rag", abstain=True),
        backend=ScriptedBackend([f"Final: {ABSTAIN}"]),
        index=tiny_index,
        corpus="tiny",
    )
    trajectory = attach_sources(session.ask(QUESTION), tiny_index)
    assert trajectory.abstained and trajectory.answer is None
    assert trajectory.sources, "the nearest passages the search found"
    lines = format_sources(trajectory)
    assert lines[0].startswith("Nearest passages")


# --- the support check (checks/support.py) ------------------------------------------------------------------------


def test_identifiers_are_names_written_as_code() -> None:
    from offline_agent.checks.support import identifiers

    assert identifiers("What is the default of max_parallel_vacuum_workers?") == ["max_parallel_vacuum_workers"]
    assert identifiers("What does --incremental of pg_basebackup take?") == ["--incremental", "pg_basebackup"]
    assert identifiers("Is postgresql.conf read at start by sha256 or now()?") == ["postgresql.conf", "sha256", "now()"]
    assert identifiers("In which year was J. R. R. Tolkien born in the U.S.?") == []
    assert identifiers("Which river is well-known in Rouen?") == []


def test_a_name_of_the_question_read_nowhere_is_unsupported_without_asking() -> None:
    from offline_agent.checks.support import Support

    asked = []
    read = ["[1] max_parallel_maintenance_workers: Sets the maximum number of parallel workers. The default is 2."]
    verdict = Support().verdict(
        "What is the default value of max_parallel_vacuum_workers?", "2", read, lambda *a: asked.append(a) or "yes"
    )
    assert not verdict.supported and verdict.reason == "named" and verdict.detail == "max_parallel_vacuum_workers"
    assert asked == []


@pytest.mark.parametrize(("word", "supported"), [("yes", True), ("no", False), (None, True)])
def test_the_model_judges_the_sentences_that_hold_the_answer(word: str | None, supported: bool) -> None:
    from offline_agent.checks.support import Support

    asked = []

    def ask(system: str, user: str, words) -> str | None:
        asked.append(user)
        return word

    read = ["[1] Dublin: Dublin stands on the River Liffey. It is the capital of Ireland.", "[1] Other: nothing."]
    verdict = Support().verdict("Which river flows through Dublin?", "River Liffey", read, ask)
    assert verdict.supported is supported
    assert (
        len(asked) == 1 and "- [1] Dublin: Dublin stands on the River Liffey." in asked[0] and "capital" not in asked[0]
    )


def test_an_answer_no_sentence_holds_is_not_judged() -> None:
    from offline_agent.checks.support import Support

    verdict = Support().verdict("Which is older?", "Harvard", ["[1] Yale: founded 1701."], lambda *a: "no")
    assert verdict.supported


def test_with_the_check_a_no_ends_the_run_abstained_and_keeps_the_proposed_answer(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Vistula", "no"])
    agent = make_agent("rag", backend, build_tools(tiny_index), support_check=True)
    trajectory = agent.run(QUESTION)
    assert trajectory.abstained and trajectory.answer is None and trajectory.stop_reason == "abstained"
    final = trajectory.steps[-1]
    assert final.final == "Vistula" and final.details.refusal.reason == "unsupported (judged)"
    judge = backend.calls[1]
    assert "Proposed answer: Vistula" in judge.prompt and "yes" in judge.grammar and "no" in judge.grammar


def test_with_the_check_a_yes_lets_the_answer_stand(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Vistula", "yes"])
    trajectory = make_agent("rag", backend, build_tools(tiny_index), support_check=True).run(QUESTION)
    assert trajectory.answer == "Vistula" and not trajectory.abstained
    assert trajectory.usage.generated_tokens >= 1  # the judge's call is booked on the run


def test_the_support_check_is_an_option_of_every_loop_strategy_and_off_until_measured() -> None:
    assert not agent_settings().options.support_check and not agent_settings(profile="plain").options.support_check
    assert agent_settings("rag", options={"support_check": "true"}).options.support_check
    assert agent_settings("react", support_check=True).options.support_check


def test_abstentions_vote_as_one_answer_among_samples(tiny_index) -> None:
    from offline_agent.agents import RunConfig

    outputs = ["Thought: no\nFinal: " + ABSTAIN, "Thought: yes\nFinal: Warsaw", "Thought: no\nFinal: " + ABSTAIN]
    session = Session(backend=ScriptedBackend(outputs), index=tiny_index, corpus="tiny")
    trajectory = session.ask("Where was Marie Curie's cat born?", RunConfig(samples=3, max_steps=3))
    assert trajectory.abstained and trajectory.answer is None and trajectory.stop_reason == "abstained"
    assert [s["stop_reason"] for s in trajectory.samples] == ["abstained", "final", "abstained"]


def test_a_name_the_snippets_left_out_but_a_search_for_it_finds_is_not_unread() -> None:
    from offline_agent.checks.support import Support

    read = ["[1] Connections: The default is three connections."]
    shown = {"wal_status": "[1] pg_replication_slots: wal_status text: availability of WAL files"}
    verdict = Support().verdict(
        "What does wal_status report?", "three", read, lambda *a: None, lambda name: shown.get(name, "")
    )
    assert verdict.supported
    missing = Support().verdict("What does wal_level_x report?", "three", read, lambda *a: None, lambda name: "")
    assert not missing.supported and missing.detail == "wal_level_x"


def test_eval_scores_abstentions_apart_and_the_crag_score(tmp_path) -> None:
    from offline_agent.eval.datasets import load_dataset
    from offline_agent.eval.scoring import result_row, summarize

    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "a1", "question": "Where?", "answer": "Warsaw"},
        {"id": "a2", "question": "Where else?", "answer": "Paris"},
        {"id": "u1", "question": "Whose cat?", "answerable": False},
        {"id": "u2", "question": "Which dog?", "answerable": False, "answer": "ignored"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    records = list(load_dataset(path))
    assert [record.answerable for record in records] == [True, True, False, False] and records[3].answer == ""

    def run(answer: str | None, abstained: bool) -> Trajectory:
        stop = "abstained" if abstained else "final"
        return Trajectory(question="q", answer=answer, stop_reason=stop, abstained=abstained)

    results = [
        result_row(records[0], run("Warsaw", False)),
        result_row(records[1], run(None, True)),
        result_row(records[2], run(None, True)),
        result_row(records[3], run("Rex", False)),
    ]
    assert [row["outcome"] for row in results] == ["right", "abstained", "abstained", "wrong"]
    assert results[2]["em"] == 1.0 and results[3]["em"] == 0.0 and results[2]["gold"] is None
    summary = summarize(results)["abstention"]
    assert summary["answerable"] == {
        "questions": 2,
        "right": 1,
        "abstained": 1,
        "wrong": 0,
        "none": 0,
        "abstained_rate": 0.5,
    }
    assert summary["unanswerable"]["abstained"] == 1 and summary["unanswerable"]["wrong"] == 1
    assert summary["crag_score"] == 0.0  # (1 right - 1 wrong) / 4
