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
    spec = GrammarSpec(allow_action=False, grounded=grounded)
    grammar = build_grammar(spec, Grounding(["The Vistula flows through Warsaw."]))
    checker = GbnfChecker(grammar.gbnf)
    assert checker.accepts(f"Thought: nothing read says\nFinal: {ABSTAIN}")
    assert checker.accepts("Thought: read it\nFinal: Warsaw")
    step = StepParser(spec).parse(f"Thought: x\nFinal: {ABSTAIN}\n", Grounding(["Other text."]))
    assert step.final == ABSTAIN


def test_a_call_that_must_read_an_answer_off_may_not_abstain() -> None:
    spec = GrammarSpec(thought=False, allow_action=False, grounded=True, abstain=False)
    checker = GbnfChecker(build_grammar(spec, Grounding(["The Vistula flows through Warsaw."])).gbnf)
    assert checker.accepts("Final: Warsaw") and not checker.accepts(f"Final: {ABSTAIN}")


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
        agent_settings("rag"), backend=ScriptedBackend([f"Final: {ABSTAIN}"]), index=tiny_index, corpus="tiny"
    )
    trajectory = attach_sources(session.ask(QUESTION), tiny_index)
    assert trajectory.abstained and trajectory.answer is None
    assert trajectory.sources, "the nearest passages the search found"
    lines = format_sources(trajectory)
    assert lines[0].startswith("Nearest passages")
