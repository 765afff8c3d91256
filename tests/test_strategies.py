"""The ReAct paper's other strategies (act, cot, standard) on the one loop, driven by the scripted backend."""

from __future__ import annotations

import pytest
from support import make_agent

from offline_agent.agents import AGENTS, agent_class
from offline_agent.agents.strategies import ActAgent, CoTAgent, StandardAgent
from offline_agent.backends import ScriptedBackend
from offline_agent.errors import ConfigError
from offline_agent.grammar import GbnfChecker
from offline_agent.prompts import prompt_text
from offline_agent.tools import build_tools


def make(name: str, index, outputs, **config):
    backend = ScriptedBackend(outputs)
    return make_agent(name, backend, build_tools(index), **config), backend


def test_registry_holds_the_nine_strategies() -> None:
    names = ["verify", "react", "act", "cot", "standard", "knowagent", "critic", "plan", "rag"]
    assert {name: cls.name for name, cls in AGENTS.items()} == {name: name for name in names}
    with pytest.raises(ConfigError, match=r"unknown agent 'reflexion'; choose from \['act', 'cot', 'critic'"):
        agent_class("reflexion")


@pytest.mark.parametrize("name", ["act", "cot", "standard", "rag"])
def test_prompt_files_exist_and_fill(name: str, tiny_index) -> None:
    agent, _ = make(name, tiny_index, [])
    parts = agent.prompt_parts("Where was Marie Curie born?")
    assert "$" not in parts.system and parts.user == "Question: Where was Marie Curie born?"
    examples = prompt_text(f"{name}_examples.txt")
    assert examples.strip() in parts.system
    # the examples follow the strategy's own step format
    assert ("Thought:" in examples) == agent.uses_thought
    assert ("Action:" in examples) == agent.uses_tools
    assert ("search[" in parts.system) == agent.uses_tools


def test_act_calls_tools_without_thoughts(tiny_index) -> None:
    agent, backend = make(
        "act", tiny_index, ["Action: search[Marie Curie]\n", "Action: search[Warsaw river]", "Final: Vistula"]
    )
    trajectory = agent.run("Which river flows through the city where Marie Curie was born?")
    assert isinstance(agent, ActAgent)
    assert trajectory.agent == "act" and trajectory.stop_reason == "final" and trajectory.answer == "Vistula"
    assert [step.thought for step in trajectory.steps] == [None, None, None]
    assert trajectory.steps[0].details.seen_titles[0] == "Marie Curie"
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("Action: search[Warsaw]\n") and checker.accepts("Final: x")
    assert not checker.accepts("Thought: x\nAction: search[Warsaw]")


def test_act_rejects_a_thought_when_the_grammar_is_off(tiny_index) -> None:
    agent, _ = make("act", tiny_index, ["Thought: hmm\nAction: search[Warsaw]"], grammar=False)
    trajectory = agent.run("Where?")
    assert trajectory.stop_reason == "error" and trajectory.steps[0].parse_error is not None


def test_cot_is_one_thought_then_final(tiny_index) -> None:
    agent, backend = make("cot", tiny_index, ["Thought: Marie Curie was born in Warsaw.\nFinal: Warsaw"], max_steps=8)
    assert isinstance(agent, CoTAgent) and agent.config.max_steps == 1
    assert agent.config.thought_max >= 600 and agent.config.max_tokens >= 320
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.stop_reason == "final" and trajectory.answer == "Warsaw"
    assert trajectory.steps[0].thought == "Marie Curie was born in Warsaw."
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("Thought: because.\nFinal: Warsaw") and not checker.accepts("Final: Warsaw")
    assert not checker.accepts("Thought: x\nAction: search[Warsaw]")


def test_cot_keeps_larger_settings(tiny_index) -> None:
    agent, _ = make("cot", tiny_index, [], thought_max=900, max_tokens=512)
    assert (agent.config.thought_max, agent.config.max_tokens, agent.config.max_steps) == (900, 512, 1)


def test_standard_answers_directly(tiny_index) -> None:
    agent, backend = make("standard", tiny_index, ["Final: Warsaw\n"])
    assert isinstance(agent, StandardAgent) and agent.config.max_steps == 1
    trajectory = agent.run("Where was Marie Curie born?")
    assert trajectory.answer == "Warsaw" and trajectory.steps[0].thought is None
    checker = GbnfChecker(backend.calls[0].grammar)
    assert checker.accepts("Final: Warsaw") and not checker.accepts("Thought: x\nFinal: Warsaw")


@pytest.mark.parametrize("name", ["cot", "standard"])
def test_single_step_strategies_stop_on_an_action_without_grammar(name: str, tiny_index) -> None:
    text = ("Thought: x\n" if name == "cot" else "") + "Action: search[Warsaw]"
    agent, backend = make(name, tiny_index, [text], grammar=False)
    trajectory = agent.run("Where?")
    assert backend.calls[0].grammar is None
    assert trajectory.stop_reason == "error" and trajectory.answer is None and len(trajectory.steps) == 1


def test_strategies_have_distinct_grammar_and_prompt_hashes(tiny_index) -> None:
    agents = {name: make(name, tiny_index, [])[0] for name in AGENTS}
    # verify writes react's steps (its checks come after the grammar), so only its prompt tells the two apart
    assert agents["verify"].grammar_sha256 == agents["react"].grammar_sha256
    assert len({agent.grammar_sha256 for agent in agents.values()}) == len(AGENTS) - 1
    assert len({agent.prompt_parts("q").sha256 for agent in agents.values()}) == len(AGENTS)
