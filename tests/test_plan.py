"""The planner graph (`--agent plan`): planner -> executor -> evaluator -> (planner | respond), scripted."""

from __future__ import annotations

import json
import threading

import pytest
import support

from offline_agent.agents import AgentCallbacks, RunConfig
from offline_agent.agents.plan import PlanAgent, follow_up_rule, plan_model
from offline_agent.backends import ScriptedBackend
from offline_agent.details import PlannedCall
from offline_agent.eval.scoring import answer_check_fields
from offline_agent.grammar import GbnfChecker
from offline_agent.steps import Completion, Turn
from offline_agent.tools import build_tools
from offline_agent.tools.base import ToolRegistry


def plan(*calls: tuple[str, str], thought: str = "Next.") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "argument": a} for t, a in calls]})


def verdict(sufficient: bool, missing: str = "") -> str:
    return json.dumps({"sufficient": sufficient, "missing": missing})


def make_agent(index, outputs, **config) -> tuple[PlanAgent, ScriptedBackend]:
    backend = ScriptedBackend(outputs)
    return support.make_agent(PlanAgent, backend, build_tools(index), **config), backend


def test_one_round_then_answer(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [plan(("search", "Marie Curie")), verdict(True), "Final: Warsaw"],
    )
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    roles = [step.details.role for step in trajectory.steps]
    assert roles == ["planner", "evaluator", "respond"]
    planner = trajectory.steps[0]
    assert planner.details.calls == [PlannedCall("search", "Marie Curie")]
    assert planner.details.seen_titles[0] == "Marie Curie"
    assert planner.observation.startswith("[1] search[Marie Curie]: [1] Marie Curie:")
    # The planner's grammar is the JSON grammar of its plan model; it lists only tools that can run side by side.
    assert backend.calls[0].grammar == agent.plan_call.grammar.gbnf
    assert '\\"lookup\\"' not in backend.calls[0].grammar and '\\"search\\"' in backend.calls[0].grammar
    assert backend.calls[1].grammar == agent.verdict_call.grammar.gbnf
    # The evidence is in every later prompt, before the role's instruction.
    assert "Evidence:\n[1] search[Marie Curie]" in backend.calls[1].prompt
    assert "Evidence:\n[1] search[Marie Curie]" in backend.calls[2].prompt


def test_a_grounded_answer_comes_from_the_evidence(tiny_index) -> None:
    # Grounded (the product's default), the responder's Final is a span of what the calls returned, as a ReAct
    # step's is; a call that found nothing adds nothing.
    outputs = [plan(("search", "Marie Curie"), ("search", "zzzqqq")), verdict(True), "Final: Warsaw"]
    agent, backend = make_agent(tiny_index, outputs, grounded=True, answer_form=True)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    checker = GbnfChecker(backend.calls[2].grammar)
    assert checker.accepts("Final: Warsaw") and checker.accepts("Final: Marie Curie")
    assert not checker.accepts("Final: Krakow") and not checker.accepts("Final: No")
    assert not checker.accepts("Final: zzzqqq")  # from the Notice of the search that found nothing
    # What the grammar was built from and its cost are recorded, as a ReAct step's are, so eval's rows have them.
    respond = trajectory.steps[-1]
    assert respond.details.grounding.sentences > 0 and respond.details.grounding.refused == 0
    fields = answer_check_fields(trajectory.steps)
    assert fields["grounding_build_s"] == [respond.details.grounding.build_s]
    assert len(fields["grounding_compile_s"]) == 1
    agent, _ = make_agent(tiny_index, outputs[:2] + ["Final: Krakow"], grounded=True, answer_form=True)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "error" and "not a span of anything read" in (trajectory.error or "")


def test_a_grounded_choice_is_answered_with_an_option(tiny_index) -> None:
    outputs = [plan(("search", "Marie Curie")), verdict(True), "Final: Marie Curie"]
    agent, backend = make_agent(tiny_index, outputs, grounded=True, answer_form=True)
    trajectory = agent.run("Who was born first, Marie Curie or Pierre Curie?")
    assert trajectory.answer == "Marie Curie"
    checker = GbnfChecker(backend.calls[2].grammar)
    assert checker.accepts("Final: Pierre Curie") and not checker.accepts("Final: Warsaw")


def test_a_grounded_run_with_nothing_read_answers_freely(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, [plan(), "Final: unknown"], grounded=True, answer_form=True)
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.answer == "unknown" and backend.calls[1].grammar == agent.respond_grammar.gbnf


def test_missing_goes_back_to_the_planner_and_repeats_are_dropped(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            plan(("search", "Marie Curie")),
            verdict(False, "the river of Warsaw"),
            plan(("search", "marie  CURIE"), ("search", "Warsaw river")),
            verdict(True),
            "Final: Vistula",
        ],
    )
    trajectory = agent.run("Which river flows through the city where Marie Curie was born?")
    assert trajectory.answer == "Vistula"
    assert "Still missing: the river of Warsaw" in backend.calls[2].prompt
    second = trajectory.steps[2]
    assert second.details.dropped == [PlannedCall("search", "marie  CURIE")]
    assert [r.argument for r in second.details.results] == ["Warsaw river"]
    assert "[2] search[Warsaw river]" in backend.calls[3].prompt


def test_no_calls_answers_at_once(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, [plan(thought="I know this."), "Final: 1867"])
    trajectory = agent.run("In which year was Marie Curie born?")
    assert trajectory.answer == "1867"
    assert [step.details.role for step in trajectory.steps] == ["planner", "respond"]
    assert "Evidence: none yet." in backend.calls[1].prompt


def test_only_repeated_calls_go_to_respond(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [plan(("search", "Warsaw")), verdict(False, "more"), plan(("search", "warsaw")), "Final: Vistula"],
    )
    trajectory = agent.run("Which river flows through Warsaw?")
    assert [step.details.role for step in trajectory.steps] == ["planner", "evaluator", "planner", "respond"]
    assert trajectory.steps[2].details.results == []


def test_rounds_are_bounded(tiny_index) -> None:
    agent, backend = make_agent(
        tiny_index,
        [
            plan(("search", "Warsaw")),
            verdict(False, "x"),
            plan(("search", "Vistula")),
            verdict(False, "y"),
            "Final: Vistula",
        ],
        max_steps=2,
    )
    assert agent.iterations == 2
    trajectory = agent.run("Which river flows through Warsaw?")
    assert trajectory.stop_reason == "final" and len(backend.calls) == 5
    assert trajectory.steps[-1].final_only


def test_default_rounds_are_four(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [])
    assert agent.iterations == 4


class BarrierTool:
    """Two calls of this tool only get past the barrier when they run at the same time."""

    name = "probe"
    description = "waits for a partner call"
    schema = None

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=10)
        self.threads: set[int] = set()

    def __call__(self, argument: str) -> str:
        self.threads.add(threading.get_ident())
        self.barrier.wait()
        return f"probed {argument}"


def test_independent_calls_run_in_parallel_threads() -> None:
    tool = BarrierTool()
    backend = ScriptedBackend([plan(("probe", "a"), ("probe", "b")), verdict(True), "Final: done"])
    agent = PlanAgent(backend, ToolRegistry([tool]), RunConfig())
    trajectory = agent.run("Probe twice.")
    results = [result.to_dict() for result in trajectory.steps[0].details.results]
    assert [r["observation"] for r in results] == ["probed a", "probed b"]
    assert not any(r["is_error"] for r in results) and len(tool.threads) == 2


def test_json_argument_tool_gets_its_single_property(tiny_index) -> None:
    agent, _ = make_agent(tiny_index, [plan(("calculator", "1979 - 1961")), verdict(True), "Final: 18"])
    trajectory = agent.run("How many years from 1961 to 1979?")
    assert trajectory.steps[0].details.results[0].observation == "1979 - 1961 = 18"


def test_grammar_off_bad_plan_is_a_format_error(tiny_index) -> None:
    agent, backend = make_agent(tiny_index, ["I will search for Marie Curie."], grammar=False)
    trajectory = agent.run("Where was Marie Curie born?")
    assert backend.calls[0].grammar is None
    assert trajectory.stop_reason == "error" and trajectory.answer is None
    assert trajectory.steps[-1].parse_error is not None and trajectory.error.startswith("planner:")


def test_bad_verdict_counts_as_not_sufficient(tiny_index) -> None:
    agent, _ = make_agent(
        tiny_index,
        [plan(("search", "Warsaw")), "yes it is enough", plan(), "Final: Vistula"],
        grammar=False,
    )
    trajectory = agent.run("Which river flows through Warsaw?")
    assert trajectory.answer == "Vistula"
    assert trajectory.steps[1].parse_error is not None and trajectory.steps[1].details.sufficient is False


def test_cut_off_plan_is_retried_with_more_tokens(tiny_index) -> None:
    cut = Completion(text='{"thought": "I need', finish_reason="length")
    agent, backend = make_agent(tiny_index, [cut, plan(), "Final: Warsaw"])
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.answer == "Warsaw" and trajectory.steps[0].attempts == 2
    assert backend.calls[1].max_tokens == 2 * backend.calls[0].max_tokens


def test_respond_streams_and_callbacks_fire(tiny_index) -> None:
    tokens: list[str] = []
    tools: list[str] = []
    backend = ScriptedBackend([plan(("search", "Warsaw")), verdict(True), "Final: Vistula"])
    callbacks = AgentCallbacks(on_token=tokens.append, on_tool_start=lambda name, arg: tools.append(name))
    PlanAgent(backend, build_tools(tiny_index), RunConfig(), callbacks).run("Which river flows through Warsaw?")
    # The planner's and evaluator's JSON stream too, then the answer.
    assert tokens[-1] == "Final: Vistula" and tokens[0].startswith('{"thought"') and len(tokens) == 3
    assert tools == ["search"]


def test_plan_model_lists_the_tools() -> None:
    model = plan_model(("search",))
    assert model.model_validate({"thought": "t", "calls": [{"tool": "search", "argument": "x"}]}).calls[0].tool
    with pytest.raises(ValueError):
        model.model_validate({"thought": "t", "calls": [{"tool": "lookup", "argument": "x"}]})


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("And his wife?", True),
        ("What about the other one?", True),
        ("Where was he born?", True),
        ("Who designed the Eiffel Tower in Paris?", False),
        ("Which river flows through the capital of Poland?", False),
        ("Where did Marie Curie study after that?", None),
    ],
)
def test_follow_up_rule(question: str, expected: bool | None) -> None:
    assert follow_up_rule(question) is expected


def test_follow_up_in_chat_asks_the_model_when_unsure(tiny_index) -> None:
    history = [Turn(question="Who founded the Larkspur Gallery?", answer="Edda Morlin")]
    agent, backend = make_agent(tiny_index, ['{"needs_previous": true}', plan(thought="Known."), "Final: 1884"])
    trajectory = agent.run("Where did Marie Curie study after that?", history=history)
    assert trajectory.answer == "1884"
    assert "Previous answer: Edda Morlin" in backend.calls[0].prompt
    assert "Earlier question: Who founded the Larkspur Gallery?" in backend.calls[1].prompt


def test_stand_alone_question_does_not_see_the_previous_turn(tiny_index) -> None:
    history = [Turn(question="Who founded the Larkspur Gallery?", answer="Edda Morlin")]
    agent, backend = make_agent(tiny_index, [plan(thought="Known."), "Final: Warsaw"])
    agent.run("Where was the physicist Marie Curie born?", history=history)
    assert len(backend.calls) == 2 and "Earlier question" not in backend.calls[0].prompt
