"""knowagent, critic and plan, and every JSON grammar, on the real small model (SmolLM2-135M, loaded once).

The scripted tests check each strategy's logic on text we wrote; these check that on text a real model writes under
the grammars every step parses, every JSON turn validates against its pydantic model, and every run ends with a valid
stop reason. A 135M model answers badly; the format must hold anyway.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from support import ROOT, make_agent

from offline_agent.agents import AgentCallbacks, RunConfig, agent_class, agent_settings
from offline_agent.agents.action_graph import START
from offline_agent.agents.critic import Critique, Extraction
from offline_agent.agents.plan import FollowUp, Verdict, plan_model
from offline_agent.agents.step_runner import JsonCall, StepRunner
from offline_agent.details import CriticDetails, KnowAgentDetails, PlanDetails
from offline_agent.prompts import render_chat
from offline_agent.runner import agent_tools
from offline_agent.steps import STOP_REASONS, Trajectory
from offline_agent.tools import build_tools

pytestmark = pytest.mark.model

QUESTIONS = [json.loads(line)["question"] for line in (ROOT / "corpora/sample/questions.jsonl").open()]


@pytest.fixture(scope="module")
def sample_index():
    from offline_agent.retrieval import open_corpus

    return open_corpus(ROOT / "corpora" / "sample" / "docs")


def run(name: str, backend, index, question: str, **config) -> tuple[object, Trajectory]:
    strategy = agent_class(name)
    agent = make_agent(strategy, backend, build_tools(index, agent_tools(strategy)), max_steps=4, **config)
    trajectory = agent.run(question)
    assert trajectory.stop_reason in STOP_REASONS and trajectory.stop_reason in ("final", "max_steps")
    assert trajectory.error is None and trajectory.steps
    assert all(step.parse_error is None for step in trajectory.steps)
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
    return agent, trajectory


@pytest.mark.parametrize("question", QUESTIONS[3:5])
def test_knowagent_moves_only_along_its_graph(small_backend, sample_index, question: str) -> None:
    agent, trajectory = run("knowagent", small_backend, sample_index, question)
    path = [START]
    for step in trajectory.steps:
        details = step.details
        assert isinstance(details, KnowAgentDetails)
        assert details.allowed == list(agent.allowed_moves(path, step.final_only))
        move = details.action_path[-1]
        assert details.action_path == [*path, move] and move in details.allowed
        assert step.raw.startswith(f"ActionPath: {path[-1]} -> {move}\n")
        tool = agent.graph.tool_of(move)
        assert (step.final is not None) if tool == "Final" else (step.action == tool)
        assert 0 <= details.prevented <= len(details.rejections)
        path = details.action_path


@pytest.mark.parametrize("name", ["knowagent", "critic", "plan"])
def test_every_step_parses_under_the_answer_defaults(small_backend, sample_index, name: str) -> None:
    # What `ask` and `eval` run with --agent NAME: grounded Finals in the form the question asks for. knowagent's
    # grammar once offered a grounded Finish only yes or no, which the parser refused on an open question.
    answer = agent_settings(name, "answer").options.to_dict()  # the answer profile's values react's options take
    run(name, small_backend, sample_index, QUESTIONS[3], **answer)


@pytest.mark.parametrize("question", QUESTIONS[3:5])
def test_critic_json_turns_validate_on_the_real_model(small_backend, sample_index, question: str) -> None:
    _, trajectory = run("critic", small_backend, sample_index, question)
    calls = 0
    for step in trajectory.steps:
        details = step.details
        assert details is None or isinstance(details, CriticDetails)
        if step.action is None:
            continue
        assert details.memory is not None
        for entry, model in ((details.extraction, Extraction), (details.critic, Critique)):
            if entry is None or entry.skipped:
                continue
            calls += 1
            assert entry.parse_error is None and entry.attempts >= 1
            model.model_validate_json(entry.raw)  # the text itself, not only our parser, is valid JSON of the model
    assert calls >= 1 or all(step.action is None or step.tool_error for step in trajectory.steps)


@pytest.mark.parametrize("question", QUESTIONS[3:5])
def test_plan_nodes_validate_on_the_real_model(small_backend, sample_index, question: str) -> None:
    agent, trajectory = run("plan", small_backend, sample_index, question)
    roles = [step.details.role for step in trajectory.steps]
    assert roles[0] == "planner" and roles[-1] in ("respond", "planner", "evaluator")
    for step in trajectory.steps:
        details = step.details
        assert isinstance(details, PlanDetails)
        if details.role == "planner":
            plan = agent.plan_call.model.model_validate_json(step.raw)
            assert [call.tool for call in details.calls] == [call.tool for call in plan.calls]
        elif details.role == "evaluator":
            assert Verdict.model_validate_json(step.raw).sufficient == details.sufficient
        else:
            assert step.final is not None and step.raw.startswith("Final: ") and trajectory.answer == step.final
    if trajectory.stop_reason == "final":
        assert roles[-1] == "respond"


@pytest.mark.parametrize(
    "model",
    [Extraction, Critique, Verdict, FollowUp, plan_model(("search", "retrieve"))],
    ids=["extraction", "critique", "verdict", "follow-up", "plan"],
)
def test_json_grammars_hold_on_sampled_output(small_backend, model: type[BaseModel]) -> None:
    """At temperature 1.0, every reply under a JSON grammar parses and validates, for several seeds."""
    call = JsonCall(model)
    runner = StepRunner(small_backend, RunConfig(temperature=1.0), AgentCallbacks())
    example = json.dumps(model.model_json_schema()["properties"], sort_keys=True)[:300]
    messages = [
        {"role": "system", "content": f"Reply with one JSON object with these fields: {example}"},
        {"role": "user", "content": f"Question: {QUESTIONS[0]}"},
    ]
    prompt = render_chat(
        small_backend.chat_template, messages, bos_token=small_backend.bos_token, eos_token=small_backend.eos_token
    )
    for seed in range(4):
        result = runner.json(None, prompt, call, seed=seed)
        assert result.stopped is None and result.error is None, result.text
        assert model.model_validate_json(result.text) == result.value
