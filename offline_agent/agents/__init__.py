"""Agent strategies over one loop: ReAct now; act, cot, standard and the seed designs build on the same parts."""

from __future__ import annotations

from offline_agent.agents.critic import CriticAgent
from offline_agent.agents.knowagent import KnowAgent
from offline_agent.agents.plan import PlanAgent
from offline_agent.agents.react import AgentCallbacks, AgentConfig, ReActAgent
from offline_agent.agents.strategies import ActAgent, CoTAgent, StandardAgent
from offline_agent.errors import ConfigError

AGENTS = {"react": ReActAgent, "act": ActAgent, "cot": CoTAgent, "standard": StandardAgent}
AGENTS["knowagent"] = KnowAgent
AGENTS["critic"] = CriticAgent
AGENTS["plan"] = PlanAgent


def agent_class(name: str) -> type[ReActAgent]:
    """The agent strategy registered under `name`."""
    try:
        return AGENTS[name]
    except KeyError:
        raise ConfigError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}") from None


__all__ = ["AGENTS", "AgentCallbacks", "AgentConfig", "ReActAgent", "agent_class"]
