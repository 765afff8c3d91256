"""Self-consistency (--samples K) on the scripted backend: the vote, the tie rule, merged steps, one budget."""

from __future__ import annotations

from offline_agent.agents import RunConfig
from offline_agent.agents.consistency import vote
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.runner import Session


def test_vote_counts_normalised_answers_and_ties_go_to_the_earliest_run() -> None:
    assert vote(["The Liffey", "Liffey", "Dublin"]) == (0, {"liffey": 2, "dublin": 1})
    assert vote(["Dublin", "Liffey", None, "liffey"]) == (1, {"dublin": 1, "liffey": 2})
    assert vote(["Dublin", "Liffey"])[0] == 0  # a tie: the first run (greedy) wins
    assert vote([None, None]) == (None, {})


def test_three_samples_answer_by_majority_and_keep_every_run(tiny_index) -> None:
    backend = ScriptedBackend(
        [
            "Thought: I know.\nFinal: Paris",
            "Thought: look.\nAction: search[Marie Curie]",
            "Thought: found.\nFinal: Warsaw",
            "Thought: sure.\nFinal: warsaw",
        ]
    )
    session = Session(backend=backend, index=tiny_index, corpus="tiny")
    trajectory = session.ask("Where was Marie Curie born?", RunConfig(samples=3, max_steps=3))
    assert trajectory.answer == "Warsaw" and trajectory.stop_reason == "final"
    assert [s["answer"] for s in trajectory.samples] == ["Paris", "Warsaw", "warsaw"]
    assert trajectory.votes == {"paris": 1, "warsaw": 2}
    assert [step.details.sample for step in trajectory.steps] == [0, 1, 1, 2]
    # Run 1 is the configured (greedy) run; the others sample with their own seeds.
    assert [s["temperature"] for s in trajectory.samples] == [0.0, 0.7, 0.7]
    assert len({s["seed"] for s in trajectory.samples}) == 3
    assert [call.temperature for call in backend.calls] == [0.0, 0.7, 0.7, 0.7]


def test_one_sample_is_an_ordinary_run(tiny_index) -> None:
    backend = ScriptedBackend(["Thought: x\nFinal: Warsaw"])
    trajectory = Session(backend=backend, index=tiny_index, corpus="tiny").ask("Where?", RunConfig())
    assert trajectory.samples == [] and trajectory.votes == {}
    assert trajectory.steps[0].details is None or trajectory.steps[0].details.sample is None
