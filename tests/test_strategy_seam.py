"""The strategy seam: recorded runs replay unchanged, a user's own strategy plugs in, and the step runner's rules."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field
from strategy_golden import differences, read_golden, real_settings, replay_real, run_scripted, sample_index

from offline_agent.agents import (
    AGENTS,
    AgentCallbacks,
    ReActAgent,
    RunConfig,
    RunState,
    Strategy,
    agent_class,
    agent_settings,
    register_strategy,
)
from offline_agent.agents.plan import PlanAgent
from offline_agent.agents.step_runner import JsonCall, StepRunner
from offline_agent.backends import ScriptedBackend
from offline_agent.details import DETAILS, StepDetails
from offline_agent.errors import ConfigError, ContextOverflowError
from offline_agent.parse import parser_for
from offline_agent.runner import Session
from offline_agent.steps import STOP_REASONS, Completion, StepRecord, Trajectory, add_stop_reason
from offline_agent.tools import build_tools

# --- recorded runs ----------------------------------------------------------------------------------------------------


def test_scripted_runs_of_every_strategy_match_the_recording() -> None:
    """Prompts, grammars, settings, callbacks and trajectories of fixed scripted runs (tests/strategy_golden.py),
    recorded before the strategy seam existed. After an intended change of behaviour, record again with
    `python tests/strategy_golden.py record scripted` and say why in the commit."""
    found = differences(read_golden("scripted"), run_scripted(), "scripted")
    assert not found, "\n".join(found)


def test_recorded_model_runs_replay_to_the_same_trajectories() -> None:
    """Real runs of the small model on the sample corpus (every strategy), recorded before the strategy seam: fed
    the model's recorded replies, today's agents send the same prompts, grammars and seeds (ReplayBackend refuses
    any other call) and build the same trajectories."""
    recorded = read_golden("smollm")
    assert {run["agent"] for run in recorded["runs"]} == set(AGENTS)
    replayed = replay_real(recorded, sample_index())
    for run, trajectory in zip(recorded["runs"], replayed, strict=True):
        found = differences(run["trajectory"], trajectory, f"{run['agent']}: {run['question']}")
        assert not found, "\n".join(found)


def test_the_real_runs_use_the_settings_recorded() -> None:
    assert real_settings("react") == agent_settings("react", "plain", max_steps=4, temperature=0.0, seed=0)


# --- a user's own strategy ----------------------------------------------------------------------------------------


class SearchFirst(ReActAgent):
    """ReAct that may not answer before a search has read something: until then its grammar offers no Final."""

    name = "search-first"

    def no_final(self) -> Any:
        return parser_for(replace(self.spec, allow_final=False))

    @property
    def grammar_sha256(self) -> str:
        return hashlib.sha256((super().grammar_sha256 + self.no_final().grammar.sha256).encode()).hexdigest()

    def step_grammar(self, state, index, final_only):
        read = any(step.details and step.details.seen_titles for step in state.trajectory.steps)
        if read or final_only:
            return super().step_grammar(state, index, final_only)
        parser = self.no_final()
        return parser.grammar, parser


class Verdict(BaseModel):
    answerable: bool
    reason: str = Field(max_length=80)


@dataclass
class TriageDetails(StepDetails):
    """The triage strategy's step: the verdict it reached."""

    answerable: bool | None = None
    reason: str | None = None

    OWN: ClassVar[tuple[str, ...]] = ("answerable", "reason")


class Triage(Strategy):
    """One JSON call through the step runner: can the corpus answer the question at all?"""

    name = "triage"
    details_type = TriageDetails

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.call = JsonCall(Verdict)

    def loop(self, state: RunState) -> None:
        record = StepRecord(index=0, raw="")
        state.trajectory.steps.append(record)
        result = self.runner.json(state, f"Question: {state.trajectory.question}\nVerdict:", self.call, seed=0)
        self.runner.book(record, result)
        if result.value is None:
            if not state.stopped:
                state.stop("error", f"triage: {result.error}")
            return
        details = record.ensure_details(TriageDetails)
        details.answerable, details.reason = result.value.answerable, result.value.reason
        state.finish("yes" if result.value.answerable else "no")


@pytest.fixture
def registered() -> Iterator[None]:
    """Register the test's strategies, and leave the registries as they were."""
    before, details_before = dict(AGENTS), dict(DETAILS)
    register_strategy(SearchFirst)
    register_strategy(Triage)
    yield
    AGENTS.clear()
    AGENTS.update(before)
    DETAILS.clear()
    DETAILS.update(details_before)


def test_a_users_strategy_registered_from_outside_the_package(registered, tiny_index) -> None:
    backend = ScriptedBackend(["Thought: look it up\nAction: search[Marie Curie]", "Thought: found\nFinal: Warsaw"])
    session = Session(backend=backend, index=tiny_index, corpus="tiny", agent="search-first")
    trajectory = session.ask("Where was Marie Curie born?")
    assert agent_class("search-first") is SearchFirst
    assert trajectory.agent == "search-first" and trajectory.answer == "Warsaw" and trajectory.stop_reason == "final"
    first, second = (call.grammar for call in backend.calls)
    assert "Final: " not in first and "Final: " in second  # the second step's grammar follows from the first's reading
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
    assert trajectory.grammar_sha256 == SearchFirst(backend, build_tools(tiny_index)).grammar_sha256


def test_a_users_strategy_with_its_own_loop_and_details(registered, tiny_index) -> None:
    backend = ScriptedBackend(['{"answerable": true, "reason": "the corpus has her page"}'])
    trajectory = Session(backend=backend, index=tiny_index, corpus="tiny", agent="triage").ask("Marie Curie?")
    assert trajectory.answer == "yes" and backend.calls[0].grammar == JsonCall(Verdict).grammar.gbnf
    details = trajectory.steps[0].details
    assert isinstance(details, TriageDetails) and details.answerable is True
    again = Trajectory.from_json(trajectory.to_json())
    assert again == trajectory and isinstance(again.steps[0].details, TriageDetails)
    assert json.loads(trajectory.to_json())["steps"][0]["details"] == {
        "answerable": True,
        "reason": "the corpus has her page",
    }


def test_register_strategy_refuses_what_is_not_one(registered) -> None:
    with pytest.raises(ConfigError, match="not a strategy"):
        register_strategy(dict)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="registered already"):
        register_strategy(type("Other", (ReActAgent,), {"name": "search-first"}))
    with pytest.raises(ConfigError, match="bad strategy name"):
        register_strategy(SearchFirst, "no spaces")
    assert register_strategy(SearchFirst) is SearchFirst  # the same class again is fine


# --- hooks for what comes next: a run that ends before its first step, with a reason of its own ---------------------


class ScopeCheck(ReActAgent):
    """Declines questions about the weather before any step, with a stop reason of its own (the kind of check a
    scope hook makes; the built-in one is agents/scope.py, stop reason out_of_scope)."""

    name = "scope-check"

    def begin(self, state: RunState) -> None:
        if "weather" in state.trajectory.question:
            state.finish("I can only answer questions about the documents.", reason="off_topic")


@pytest.fixture
def off_topic() -> Iterator[None]:
    # A reason of the test's own, taken out again afterwards: the built-in list stays as it was for later tests.
    add_stop_reason("off_topic")
    yield
    STOP_REASONS.remove("off_topic")


def test_begin_may_end_the_run_with_a_reason_of_its_own(off_topic, tiny_index) -> None:
    backend = ScriptedBackend(["Thought: x\nFinal: Warsaw"])
    agent = ScopeCheck(backend, build_tools(tiny_index))
    refused = agent.run("What is the weather in Warsaw?")
    assert refused.stop_reason == "off_topic" and refused.answer.startswith("I can only") and not backend.calls
    assert not refused.steps and refused.error is None
    assert agent.run("Where was Marie Curie born?").answer == "Warsaw"


def test_stop_reasons_are_checked() -> None:
    state = RunState(Trajectory(question="q"))
    with pytest.raises(ValueError, match="add_stop_reason"):
        state.stop("bored")
    with pytest.raises(ValueError, match="lower-case word"):
        add_stop_reason("Out Of Scope")
    state.stop("max_steps")
    assert state.stopped and state.trajectory.stop_reason == "max_steps"


# --- no strategy reaches into another's private parts ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_no_strategy_overrides_a_private_method_of_another_class(name: str) -> None:
    strategy = agent_class(name)
    for klass in strategy.__mro__:
        if klass is object or not klass.__module__.startswith("offline_agent"):
            continue
        for attribute in vars(klass):
            if not attribute.startswith("_") or attribute.startswith("__"):
                continue
            owners = [base.__name__ for base in klass.__mro__[1:] if attribute in vars(base)]
            assert not owners, f"{klass.__name__}.{attribute} overrides a private method of {owners}"


def test_the_planner_builds_no_step_grammars_it_never_uses(tiny_index) -> None:
    agent = PlanAgent(ScriptedBackend(), build_tools(tiny_index))
    assert not hasattr(agent, "grammar") and not hasattr(agent, "final_grammar") and not hasattr(agent, "spec")
    assert not issubclass(PlanAgent, ReActAgent)


# --- the step runner -------------------------------------------------------------------------------------------------


class Answer(BaseModel):
    answer: str = Field(max_length=40)


class Raising(ScriptedBackend):
    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        raise ContextOverflowError("the prompt needs 9000 tokens; the context holds 4096")


def runner(backend: Any, **config: Any) -> tuple[StepRunner, list[str]]:
    streamed: list[str] = []
    return StepRunner(backend, RunConfig(**config), AgentCallbacks(on_token=streamed.append)), streamed


def test_a_cut_off_json_turn_is_retried_once_with_twice_the_tokens() -> None:
    backend = ScriptedBackend([Completion('{"answer": "War', finish_reason="length"), '{"answer": "Warsaw"}'])
    step_runner, streamed = runner(backend)
    state = RunState(Trajectory(question="q"))
    result = step_runner.json(state, "p", JsonCall(Answer), seed=3, max_tokens=20, stream=True)
    assert result.value == Answer(answer="Warsaw") and result.attempts == 2 and result.error is None
    assert result.retried_error is not None and result.retried_error.label == "truncated"
    assert [call.max_tokens for call in backend.calls] == [20, 40] and backend.calls[0].stop == ("\n\n",)
    assert result.usage.generated_tokens == sum(backend.count_tokens(t) for t in ('{"answer": "War', result.text))
    assert streamed == ['{"answer": "War', '{"answer": "Warsaw"}'] and not state.stopped


def test_a_step_turn_that_does_not_parse_stops_the_run_and_is_recorded(tiny_index) -> None:
    agent = ReActAgent(ScriptedBackend(["no format"]), build_tools(tiny_index))
    state = agent.new_state(Trajectory(question="q"), agent.prompt_parts("q"), None)
    record = StepRecord(index=0, raw="")
    result = agent.runner.step(state, record, "p", agent.grammar, agent.parser, seed=0, label="step 1")
    assert result.value is None and record.raw == "no format" and record.parse_error["label"] == "missing_thought"
    assert state.stopped and state.trajectory.stop_reason == "error" and state.trajectory.error.startswith("step 1: ")


def test_overflow_and_interruption_become_stop_reasons() -> None:
    step_runner, _ = runner(Raising())
    state = RunState(Trajectory(question="q"))
    result = step_runner.json(state, "p", JsonCall(Answer), seed=0)
    assert result.stopped == "error" and result.value is None and state.trajectory.error.startswith("the prompt")
    # Without a run (a call made before the run starts), nothing is raised and nothing is booked.
    assert step_runner.json(None, "p", JsonCall(Answer), seed=0).stopped == "error"

    step_runner, _ = runner(ScriptedBackend([Completion('{"ans', finish_reason="interrupted")]))
    state = RunState(Trajectory(question="q"))
    result = step_runner.json(state, "p", JsonCall(Answer), seed=0)
    assert result.stopped == "timeout" and state.trajectory.stop_reason == "timeout" and result.text == '{"ans'


def test_with_the_grammar_off_no_grammar_reaches_the_backend() -> None:
    backend = ScriptedBackend(['{"answer": "x"}'])
    step_runner, streamed = runner(backend, grammar=False, temperature=0.7)
    assert step_runner.json(None, "p", JsonCall(Answer), seed=5).value == Answer(answer="x")
    call = backend.calls[0]
    assert call.grammar is None and call.temperature == 0.7 and call.seed == 5 and not streamed


def test_public_names_are_sorted() -> None:
    import offline_agent.agents as agents
    import offline_agent.details as details

    for module in (agents, details):
        # ruff's order (RUF022): CONSTANTS, then Classes and functions, each alphabetical
        assert module.__all__ == sorted(module.__all__, key=lambda name: (not name.isupper(), name))
        assert all(hasattr(module, name) for name in module.__all__)
