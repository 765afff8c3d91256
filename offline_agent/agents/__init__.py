"""Agent strategies over one seam: `base.Strategy` runs a question, `step_runner.StepRunner` makes every model call.

react, act, cot and standard are settings of the ReAct loop (react.py, strategies.py), and so is rag, plain retrieval
(rag.py); knowagent and critic plug into that loop through its public hooks; plan fills in the seam's loop with its
planner graph. A new strategy is one
module and one `register_strategy` line (docs/strategies.md has one). What a run obeys alike is its RunConfig (run.py);
what a strategy chooses is its options (options.py), named sets of which are profiles (settings.py).
"""

from __future__ import annotations

from offline_agent.agents.base import Strategy
from offline_agent.agents.critic import CriticAgent
from offline_agent.agents.knowagent import KnowAgent
from offline_agent.agents.options import (
    KnowAgentOptions,
    OptionInfo,
    ReActOptions,
    StrategyOptions,
    VerifyOptions,
    option,
    option_infos,
)
from offline_agent.agents.plan import PlanAgent
from offline_agent.agents.rag import RagAgent, RagOptions
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.registry import AGENTS, agent_class, register_strategy
from offline_agent.agents.run import AgentCallbacks, RunConfig, RunState
from offline_agent.agents.settings import (
    DEFAULT_PROFILE,
    PROFILES,
    AgentSettings,
    Profile,
    agent_settings,
    profile_named,
    register_profile,
)
from offline_agent.agents.step_runner import JsonCall, StepRunner, TurnResult
from offline_agent.agents.strategies import ActAgent, CoTAgent, StandardAgent
from offline_agent.agents.verify import VerifyAgent

for _strategy in (
    VerifyAgent,
    ReActAgent,
    ActAgent,
    CoTAgent,
    StandardAgent,
    KnowAgent,
    CriticAgent,
    PlanAgent,
    RagAgent,
):
    register_strategy(_strategy)

__all__ = [
    "AGENTS",
    "DEFAULT_PROFILE",
    "PROFILES",
    "AgentCallbacks",
    "AgentSettings",
    "JsonCall",
    "KnowAgentOptions",
    "LoopState",
    "OptionInfo",
    "Profile",
    "RagAgent",
    "RagOptions",
    "ReActAgent",
    "ReActOptions",
    "RunConfig",
    "RunState",
    "StepRunner",
    "Strategy",
    "StrategyOptions",
    "TurnResult",
    "VerifyOptions",
    "agent_class",
    "agent_settings",
    "option",
    "option_infos",
    "profile_named",
    "register_profile",
    "register_strategy",
]
