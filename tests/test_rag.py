"""Plain retrieval (`--agent rag`): one search for the question, then one model turn that may only answer."""

from __future__ import annotations

import json

import pytest
from support import make_agent

from offline_agent.agents import agent_settings
from offline_agent.agents.rag import RagAgent, RagOptions
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ConfigError
from offline_agent.grammar import GbnfChecker
from offline_agent.runner import Session
from offline_agent.sources import attach_sources, format_sources
from offline_agent.tools import build_tools

QUESTION = "Which river flows through the city where Marie Curie was born?"


def test_one_search_for_the_question_then_one_final(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Vistula"])
    agent = make_agent("rag", backend, build_tools(tiny_index), max_steps=8)
    assert isinstance(agent, RagAgent) and agent.config.max_steps == 2
    trajectory = agent.run(QUESTION)
    assert trajectory.agent == "rag" and trajectory.stop_reason == "final" and trajectory.answer == "Vistula"
    opening, final = trajectory.steps
    assert opening.action == "search" and opening.argument == QUESTION and opening.details.opening
    # the top passages of the question's own search: both pages the two hops need
    assert "Marie Curie" in opening.observation and "Vistula river flows through Warsaw" in opening.observation
    assert final.final == "Vistula" and final.action is None
    assert len(backend.calls) == 1  # one model call
    assert backend.calls[0].prompt.endswith(f"Action: search[{QUESTION}]\nObservation: " + opening.observation + "\n")


def test_the_model_may_only_answer(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Vistula"])
    make_agent("rag", backend, build_tools(tiny_index)).run(QUESTION)
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("Final: Vistula")
    assert not checker.accepts("Action: search[Warsaw]") and not checker.accepts("Thought: x\nFinal: Vistula")


def test_grounded_final_is_a_span_of_the_passages(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Vistula"])
    make_agent("rag", backend, build_tools(tiny_index), grounded=True).run(QUESTION)
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("Final: Vistula") and checker.accepts("Final: Warsaw")
    assert not checker.accepts("Final: Danube")  # read in no passage


def test_brackets_in_the_question_do_not_end_the_search(tiny_index) -> None:
    backend = ScriptedBackend(["Final: Warsaw"])
    trajectory = make_agent("rag", backend, build_tools(tiny_index)).run("Where was [Marie] Curie born?")
    assert trajectory.steps[0].argument == "Where was (Marie) Curie born?"


def test_the_default_profile_grounds_the_answer_but_keeps_plain_retrievals_reading() -> None:
    settings = agent_settings("rag")
    assert settings.profile == "answer"
    options = settings.options
    assert isinstance(options, RagOptions)
    assert (options.grounded, options.answer_form) == (True, True)  # the profile's
    assert (options.search_k, options.snippet, options.links, options.observation_tokens) == (5, "head", 0, 1024)
    # -o still changes what the search shows
    assert agent_settings("rag", options={"search_k": "3"}).options.search_k == 3
    # the verify default takes every value of the profile
    assert agent_settings().options.snippet == "sentences"


def test_a_session_answers_with_sources(tiny_index) -> None:
    session = Session.from_settings(
        agent_settings("rag"), backend=ScriptedBackend(["Final: Vistula"]), index=tiny_index, corpus="tiny"
    )
    trajectory = attach_sources(session.ask(QUESTION), tiny_index)
    assert trajectory.answer == "Vistula" and trajectory.profile == "answer"
    assert trajectory.options["search_k"] == 5
    assert json.loads(trajectory.to_json())["agent"] == "rag"
    assert any("The Vistula river flows through Warsaw." in line for line in format_sources(trajectory))


@pytest.mark.model
def test_rag_with_the_small_model(small_backend, tiny_index) -> None:
    trajectory = make_agent("rag", small_backend, build_tools(tiny_index), grounded=True).run(QUESTION)
    assert trajectory.stop_reason == "final" and len(trajectory.steps) == 2
    assert trajectory.steps[1].parse_error is None and trajectory.answer
    assert trajectory.answer in trajectory.steps[0].observation or trajectory.answer in QUESTION


def test_options_about_steps_the_model_never_chooses_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown option 'min_searches' for strategy rag"):
        agent_settings("rag", options={"min_searches": "1"})
