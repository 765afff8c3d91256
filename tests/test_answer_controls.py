"""The answer-quality controls of the ReAct loop on the scripted backend: the opening search, min_searches,
grounded Finals, refused lookup repeats, and what the trajectory records of each."""

from __future__ import annotations

from support import make_agent

from offline_agent.agents import ReActAgent
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.grammar import GbnfChecker
from offline_agent.tools import build_tools

QUESTION = "In which city was Marie Curie born?"


def _run(tiny_index, outputs, **config):
    backend = ScriptedBackend(outputs)
    config = {"max_steps": 4, **config}
    agent = make_agent(ReActAgent, backend, build_tools(tiny_index, question=QUESTION), **config)
    return agent.run(QUESTION), backend


def test_first_search_opens_with_the_question_written_by_the_agent(tiny_index) -> None:
    trajectory, backend = _run(tiny_index, ["Thought: She was born in Warsaw.\nFinal: Warsaw"], first_search=True)
    opening = trajectory.steps[0]
    assert opening.action == "search" and opening.argument == QUESTION
    assert opening.details.opening is True and "Marie Curie" in opening.observation
    assert trajectory.answer == "Warsaw" and len(backend.calls) == 1
    # The model's first call already sees the opening step and its Observation.
    assert f"Action: search[{QUESTION}]\nObservation: " in backend.calls[0].prompt


def test_min_searches_offers_only_search_until_met(tiny_index) -> None:
    trajectory, backend = _run(
        tiny_index,
        ["Thought: x\nAction: search[Marie Curie]", "Thought: y\nAction: search[Warsaw]", "Thought: z\nFinal: Warsaw"],
        min_searches=2,
    )
    first, second, third = (GbnfChecker(call.grammar) for call in backend.calls)
    assert not first.accepts("Thought: x\nFinal: Warsaw\n")
    assert not first.accepts("Thought: x\nAction: lookup[born]\n")
    assert first.accepts("Thought: x\nAction: search[Warsaw]\n")
    assert not second.accepts("Thought: x\nFinal: Warsaw\n")
    assert third.accepts("Thought: x\nFinal: Warsaw\n")
    assert trajectory.answer == "Warsaw"


def test_min_searches_never_blocks_the_last_step(tiny_index) -> None:
    outputs = ["Thought: x\nAction: search[Marie Curie]", "Thought: y\nFinal: Warsaw"]
    trajectory, backend = _run(tiny_index, outputs, min_searches=3, max_steps=2)
    assert GbnfChecker(backend.calls[1].grammar).accepts("Thought: y\nFinal: Warsaw\n")
    assert trajectory.answer == "Warsaw"


def test_a_lookup_that_returns_the_same_nothing_again_is_a_refused_repeat(tiny_index) -> None:
    trajectory, _ = _run(
        tiny_index,
        [
            "Thought: x\nAction: search[Marie Curie]",
            "Thought: y\nAction: lookup[Lyon]",
            "Thought: y\nAction: lookup[Lyon]",
            "Thought: z\nFinal: Warsaw",
        ],
    )
    assert not trajectory.steps[1].tool_error
    assert trajectory.steps[2].tool_error
    assert "You already ran lookup[Lyon] at step 2" in trajectory.steps[2].observation


def test_grounded_final_is_rebuilt_from_what_was_read_and_recorded(tiny_index) -> None:
    trajectory, backend = _run(
        tiny_index, ["Thought: x\nAction: search[Marie Curie]", "Thought: y\nFinal: Warsaw"], grounded=True
    )
    before, after = (GbnfChecker(call.grammar) for call in backend.calls)
    assert not before.accepts("Thought: y\nFinal: Warsaw\n")  # not read yet
    assert after.accepts("Thought: y\nFinal: Warsaw\n")
    assert not after.accepts("Thought: y\nFinal: Krakow\n")
    assert trajectory.grounded is True and trajectory.answer == "Warsaw"
    assert trajectory.steps[1].details.grounding.refused == 0


def test_an_ungrounded_final_with_the_grammar_off_is_a_labelled_parse_error(tiny_index) -> None:
    trajectory, _ = _run(tiny_index, ["Thought: y\nFinal: Krakow"], grounded=True, grammar=False)
    assert trajectory.stop_reason == "error"
    assert trajectory.steps[0].parse_error["label"] == "ungrounded"
