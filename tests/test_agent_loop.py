"""The ReAct loop's logic, driven by the scripted backend over a tiny real BM25 index."""

from __future__ import annotations

import time

import pytest
import support

from offline_agent import __version__
from offline_agent.agents import AgentCallbacks, ReActAgent, RunConfig
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ConfigError, ContextOverflowError
from offline_agent.runner import Session
from offline_agent.steps import Completion, Trajectory, Usage
from offline_agent.tools import build_tools


def make_agent(index, outputs, **config) -> tuple[ReActAgent, ScriptedBackend]:
    backend = ScriptedBackend(outputs)
    return support.make_agent(ReActAgent, backend, build_tools(index), **config), backend


def test_final_at_once(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["Thought: I know this.\nFinal: Warsaw\n"])
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    assert len(trajectory.steps) == 1 and trajectory.steps[0].thought == "I know this."
    assert backend.calls[0].grammar is not None and "search[" in backend.calls[0].grammar
    assert "Question: Where was Marie Curie born?" in backend.calls[0].prompt


def test_two_searches_then_final(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: First Marie Curie.\nAction: search[Marie Curie]\n",
            "Thought: Now the river of Warsaw.\nAction: search[Warsaw river]",
            "Thought: The Vistula flows through Warsaw.\nFinal: Vistula",
        ],
    )
    trajectory = agent.run("Which river flows through the city where Marie Curie was born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Vistula"
    first, second = trajectory.steps[:2]
    assert first.action == "search" and first.argument == "Marie Curie"
    assert first.observation.startswith("[1] Marie Curie:")
    assert first.details.seen_titles[0] == "Marie Curie"
    assert "Warsaw" in second.observation
    prompts = [call.prompt for call in backend.calls]
    # The prompt only grows, so a real backend reuses its cache for everything before.
    assert prompts[1].startswith(prompts[0]) and prompts[2].startswith(prompts[1])
    assert "Observation: [1] Marie Curie:" in prompts[1]


def test_lookup_reads_the_last_document(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [
            "Thought: x\nAction: lookup[Nobel]",
            "Thought: x\nAction: search[Marie Curie]",
            "Thought: x\nAction: lookup[Nobel]",
            "Thought: x\nAction: lookup[nobel]",
            "Thought: x\nFinal: 1903",
        ],
    )
    steps = agent.run("When did Marie Curie win the Nobel Prize?").steps
    assert steps[0].tool_error and "search first" in steps[0].observation
    assert steps[2].observation.startswith("(Result 1 / 1) She won the Nobel Prize")
    # lookup is case-insensitive and walks on: the same keyword again finds no further sentence
    assert steps[3].observation == "No more sentences in 'Marie Curie' contain 'nobel'."


def test_lookup_walks_through_matches(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [
            "Thought: x\nAction: search[Pierre Curie]",
            "Thought: x\nAction: lookup[Curie]",
            "Thought: x\nAction: lookup[Curie ]",
            "Thought: x\nFinal: done",
        ],
    )
    steps = agent.run("q").steps
    assert steps[1].observation.startswith("(Result 1 / 2) Pierre Curie was")
    assert steps[2].observation.startswith("(Result 2 / 2) He shared")


def test_repeated_call_is_not_run_again(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw]",
            "Thought: again\nAction: search[warsaw  ]",
            "Thought: ok\nFinal: Poland",
        ],
    )
    trajectory = agent.run("Which country has Warsaw as its capital?")
    assert "already ran search[warsaw]" in trajectory.steps[1].observation.lower()
    assert trajectory.steps[1].details is None
    assert trajectory.answer == "Poland"


def test_tool_error_becomes_observation(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [
            'Thought: compute\nAction: calculator[{"expression": "__import__(1)"}]',
            'Thought: compute\nAction: calculator[{"expression": "1911 - 1903"}]',
            "Thought: done\nFinal: 8",
        ],
    )
    trajectory = agent.run("How many years between her prizes?")
    assert trajectory.steps[0].tool_error and trajectory.steps[0].observation.startswith("Error:")
    assert trajectory.steps[1].observation == "1911 - 1903 = 8"
    assert trajectory.stop_reason == "final"


def test_a_tool_that_found_nothing_says_so_in_a_notice_not_evidence(tiny_index) -> None:
    tools = build_tools(tiny_index)
    found = tools.run("search", "Marie Curie")
    assert found.evidence and not found.is_error
    for name, argument in [("lookup", "zebra"), ("lookup", "zebra"), ("search", "zzzq"), ("retrieve", "zzzq")]:
        registry = build_tools(tiny_index, names=("search", "lookup", "retrieve"))
        registry.run("search", "Marie Curie")
        result = registry.run(name, argument)
        assert isinstance(result.observation, str) and result.observation.startswith("No ")
        assert not result.evidence and not result.is_error, (name, result.observation)
    failed = tools.run("calculator", {"expression": "__import__(1)"})
    assert failed.is_error and not failed.evidence


def test_a_grounded_run_takes_no_answer_from_a_notice(tiny_index) -> None:
    from offline_agent.grammar import GbnfChecker

    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nAction: lookup[zebra]",
            "Thought: c\nFinal: Warsaw",
        ],
        grounded=True,
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.steps[1].observation == "No sentence in 'Marie Curie' contains 'zebra'."
    grammar = GbnfChecker(backend.calls[2].grammar)
    assert grammar.accepts("Thought: c\nFinal: Warsaw\n")  # read in the search
    assert not grammar.accepts("Thought: c\nFinal: zebra\n") and not grammar.accepts("Thought: c\nFinal: No sentence\n")
    assert trajectory.answer == "Warsaw"


def test_parse_failure_is_recorded_and_stops(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["Thought: x\nAction: google[Ed Wood]\n"])
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "error" and trajectory.answer is None
    step = trajectory.steps[0]
    assert step.parse_error["label"] == "unknown_tool" and step.parse_error["line"] == 2
    assert step.raw == "Thought: x\nAction: google[Ed Wood]\n"
    assert len(backend.calls) == 1  # not cut off: no retry


def test_cut_off_step_is_retried_once_with_more_tokens(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [Completion("Thought: a long thought that was cut", finish_reason="length"), "Thought: ok\nFinal: x"],
        max_tokens=64,
    )
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "final"
    assert trajectory.steps[0].attempts == 2
    assert trajectory.steps[0].parse_error["label"] == "truncated"
    assert [call.max_tokens for call in backend.calls] == [64, 128]


def test_cut_off_twice_stops_with_error(tiny_index) -> None:
    cut = Completion("Thought: cut", finish_reason="length")
    agent, backend = make_agent(tiny_index, [cut, cut])
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "error" and "stops before it is complete" in trajectory.error
    assert trajectory.steps[0].parse_error["label"] == "truncated"
    assert len(backend.calls) == 2 and trajectory.answer is None


def test_last_step_allows_only_final(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw]",
            "Thought: b\nAction: search[Poland]",
            "Thought: c\nFinal: Poland",
        ],
        max_steps=3,
    )
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "final"
    assert "Action" in backend.calls[1].grammar and "Action" not in backend.calls[2].grammar
    assert trajectory.steps[2].final_only


def test_action_on_the_last_step_without_grammar_hits_max_steps(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        ["Thought: a\nAction: search[Warsaw]", "Thought: b\nAction: search[Poland]"],
        max_steps=2,
        grammar=False,
    )
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "max_steps" and trajectory.answer is None
    assert all(call.grammar is None for call in backend.calls)
    assert trajectory.grammar_sha256 is None


class SlowBackend(ScriptedBackend):
    def complete(self, prompt, **kwargs):
        time.sleep(0.3)
        return super().complete(prompt, **kwargs)


def test_timeout_stops_between_steps(tiny_index) -> None:
    backend = SlowBackend(["Thought: a\nAction: search[Warsaw]"] * 5)
    # Room for the first step on a loaded machine (0.12 s was not, with an evaluation running beside the tests);
    # five steps take 1.5 s.
    agent = ReActAgent(backend, build_tools(tiny_index), RunConfig(max_seconds=0.9, max_steps=5))
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "timeout" and 1 <= len(trajectory.steps) < 5


def test_interrupted_generation_is_a_timeout(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [Completion("Thought: hal", finish_reason="interrupted")], max_seconds=5)
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "timeout" and trajectory.steps[0].parse_error is None


class FullBackend(ScriptedBackend):
    def complete(self, prompt, **kwargs):
        raise ContextOverflowError("the prompt (5000 tokens) plus 192 new tokens exceed the context window")


def test_context_overflow_stops_with_error(tiny_index) -> None:
    agent = ReActAgent(FullBackend([]), build_tools(tiny_index))
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "error" and "context window" in trajectory.error


def test_a_step_that_would_leave_the_next_no_room_may_only_answer(tiny_index) -> None:
    """After the first step, an Action would overflow the context window at the step after it: the second step
    answers instead of searching."""
    outputs = [
        Completion("Thought: a\nAction: search[Marie Curie]", usage=Usage(prompt_tokens=300, generated_tokens=10)),
        "Thought: b\nFinal: Warsaw",
    ]
    backend = ScriptedBackend(outputs, context_size=300 + 10 + 2 * (100 + 48) + 2 * 64 - 1)
    agent = support.make_agent(ReActAgent, backend, build_tools(tiny_index), max_tokens=64, observation_tokens=100)
    trajectory = agent.run("q")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    first, second = trajectory.steps
    assert not first.final_only and second.final_only
    assert "Action: " not in backend.calls[1].grammar
    more = ["Thought: b\nAction: search[Warsaw]", "Thought: c\nFinal: Warsaw"]
    backend = ScriptedBackend(outputs[:1] + more, context_size=backend.context_size + 1)
    trajectory = ReActAgent(backend, build_tools(tiny_index), agent.config, None, agent.options).run("q")
    assert not trajectory.steps[1].final_only  # one token more, and it may search


def test_observation_is_cut_to_the_token_budget(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        ["Thought: a\nAction: search[Curie Warsaw Vistula Poland]", "Thought: b\nFinal: x"],
        observation_tokens=20,
    )
    observation = agent.run("q").steps[0].observation
    assert observation.endswith(" ...") and ScriptedBackend().count_tokens(observation) <= 20


def test_callbacks_see_every_step(tiny_index) -> None:
    seen: dict[str, list] = {"start": [], "token": [], "tool": [], "step": []}
    callbacks = AgentCallbacks(
        on_step_start=lambda i, final_only: seen["start"].append((i, final_only)),
        on_token=seen["token"].append,
        on_tool_start=lambda name, arg: seen["tool"].append((name, arg)),
        on_step=seen["step"].append,
    )
    backend = ScriptedBackend(["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: Poland"])
    ReActAgent(backend, build_tools(tiny_index), RunConfig(), callbacks).run("q")
    assert seen["start"] == [(0, False), (1, False)]
    assert seen["tool"] == [("search", "Warsaw")]
    assert len(seen["step"]) == 2 and "".join(seen["token"]).startswith("Thought: a")


def test_trajectory_records_what_makes_it_reproducible(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, ["Thought: a\nFinal: b"], seed=7, temperature=0.5)
    trajectory = agent.run("q")
    assert trajectory.seed == 7 and trajectory.temperature == 0.5
    assert len(trajectory.grammar_sha256) == 64 and len(trajectory.prompt_sha256) == 64
    assert trajectory.version == __version__ and trajectory.model["name"] == "scripted"
    again, _ = make_agent(tiny_index, ["Thought: a\nFinal: b"], seed=7, temperature=0.5)
    repeat = again.run("q")
    assert (repeat.prompt_sha256, repeat.grammar_sha256) == (
        trajectory.prompt_sha256,
        trajectory.grammar_sha256,
    )


def test_model_that_fails_mid_run_propagates(tiny_index) -> None:
    from offline_agent.errors import ModelError

    agent, _ = make_agent(tiny_index, ["Thought: a\nAction: search[Warsaw]"])
    with pytest.raises(ModelError):
        agent.run("q")


def test_session_refuses_an_empty_question(tiny_index) -> None:
    session = Session(backend=ScriptedBackend([]), index=tiny_index, corpus="tiny")
    with pytest.raises(ConfigError, match="empty"):
        session.ask("   ")


def test_session_gives_each_question_fresh_tools(tiny_index) -> None:
    backend = ScriptedBackend(
        ["Thought: a\nAction: search[Warsaw]", "Thought: b\nFinal: x", "Thought: a\nAction: lookup[capital]"]
        + ["Thought: c\nFinal: y"]
    )
    session = Session(backend=backend, index=tiny_index, corpus="tiny")
    session.ask("first")
    second = session.ask("second")
    assert second.steps[0].tool_error and "search first" in second.steps[0].observation
    assert second.corpus == "tiny"


@pytest.mark.parametrize("bad", [dict(max_steps=0), dict(max_seconds=0), dict(max_tokens=3), dict(temperature=-1)])
def test_bad_config(bad) -> None:
    with pytest.raises(ConfigError):
        RunConfig(**bad)


def test_trajectory_round_trip(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [
            "Thought: a\nAction: search[Warsaw]",
            'Thought: b\nAction: calculator[{"expression": "2*3"}]',
            Completion("Thought: cut", finish_reason="length"),
            "Thought: c\nAction: nothing[x]",
        ],
    )
    trajectory = agent.run("Ünïcode question?")
    text = trajectory.to_json()
    again = Trajectory.from_json(text)
    assert again == trajectory and again.to_json() == text
    assert again.steps[1].argument == {"expression": "2*3"}
    assert again.usage.prompt_tokens == trajectory.usage.prompt_tokens > 0
