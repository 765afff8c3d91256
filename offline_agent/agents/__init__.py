"""Agent strategies over one seam: `base.Strategy` runs a question, `step_runner.StepRunner` makes every model call.

react, act, cot and standard are settings of the ReAct loop (react.py, strategies.py); knowagent and critic plug
into that loop through its public hooks; plan fills in the seam's loop with its planner graph. A new strategy is one
module and one `register_strategy` line (the README shows one).
"""

from __future__ import annotations

from offline_agent.agents.base import (
    ANSWER_DEFAULTS,
    DEFAULT_AGENT,
    AgentCallbacks,
    AgentConfig,
    RunState,
    Strategy,
    default_config,
)
from offline_agent.agents.critic import CriticAgent
from offline_agent.agents.knowagent import KnowAgent
from offline_agent.agents.plan import PlanAgent
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.step_runner import JsonCall, StepRunner, TurnResult
from offline_agent.agents.strategies import ActAgent, CoTAgent, StandardAgent
from offline_agent.agents.verify import VerifyAgent
from offline_agent.details import DETAILS
from offline_agent.errors import ConfigError

AGENTS: dict[str, type[Strategy]] = {}


def register_strategy(strategy: type[Strategy], name: str | None = None) -> type[Strategy]:
    """Make `strategy` available by name (default: its `name`) to `agent_class`, runner.Session and the evaluation,
    and its steps' `details_type` to Trajectory.from_json. Returns the class, so it also works as a decorator."""
    if not isinstance(strategy, type) or not issubclass(strategy, Strategy):
        raise ConfigError(f"{strategy!r} is not a strategy: subclass offline_agent.agents.Strategy (or ReActAgent)")
    name = name or strategy.name
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"bad strategy name {name!r}: use letters, digits, - and _")
    if name in AGENTS and AGENTS[name] is not strategy:
        raise ConfigError(f"strategy {name!r} is registered already ({AGENTS[name].__name__})")
    AGENTS[name] = strategy
    DETAILS[name] = strategy.details_type
    return strategy


for _strategy in (VerifyAgent, ReActAgent, ActAgent, CoTAgent, StandardAgent, KnowAgent, CriticAgent, PlanAgent):
    register_strategy(_strategy)


def agent_class(name: str) -> type[Strategy]:
    """The agent strategy registered under `name`."""
    try:
        return AGENTS[name]
    except KeyError:
        raise ConfigError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}") from None


__all__ = [
    "AGENTS",
    "ANSWER_DEFAULTS",
    "DEFAULT_AGENT",
    "AgentCallbacks",
    "AgentConfig",
    "JsonCall",
    "LoopState",
    "ReActAgent",
    "RunState",
    "StepRunner",
    "Strategy",
    "TurnResult",
    "agent_class",
    "default_config",
    "register_strategy",
]
