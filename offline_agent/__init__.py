"""offline_agent: grammar-constrained question-answering agents on local models, with no network.

The public API, for a Python program (the README's Python section uses it):

    from offline_agent import AgentCallbacks, Session, Turn, agent_settings, load_backend, open_index

    index, name = open_index(None)                     # the sample corpus, a folder of documents, or an index
    settings = agent_settings(max_steps=6)             # the answer profile: verify, grounded answers
    session = Session.from_settings(settings, backend=load_backend(), index=index, corpus=name)
    trajectory = session.ask("Who wrote Middlemarch?", settings.config)

Each name is imported on first use, so `import offline_agent` stays light: no model engine (llama_cpp, torch),
no compiled kernel (numba) and not even the agents load until a name that needs them is asked for. The modules
behind the names (offline_agent.agents, .runner, .eval, ...) are importable as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offline_agent._version import __version__
from offline_agent.lazy import lazy_names

# Each public name -> the module that defines it.
_EXPORTS = {
    "AGENTS": "offline_agent.agents",
    "PROFILES": "offline_agent.agents",
    "AgentCallbacks": "offline_agent.agents",
    "AgentSettings": "offline_agent.agents",
    "Backend": "offline_agent.backends",
    "ConfigError": "offline_agent.errors",
    "EvalOptions": "offline_agent.eval",
    "OfflineAgentError": "offline_agent.errors",
    "ReActAgent": "offline_agent.agents",
    "ReActOptions": "offline_agent.agents",
    "RunConfig": "offline_agent.agents",
    "Session": "offline_agent.runner",
    "Strategy": "offline_agent.agents",
    "StrategyOptions": "offline_agent.agents",
    "Trajectory": "offline_agent.steps",
    "Turn": "offline_agent.steps",
    "agent_class": "offline_agent.agents",
    "agent_settings": "offline_agent.agents",
    "load_backend": "offline_agent.runner",
    "open_index": "offline_agent.runner",
    "register_strategy": "offline_agent.agents",
    "run_evaluation": "offline_agent.eval",
}

if TYPE_CHECKING:
    from offline_agent.agents import (
        AGENTS,
        PROFILES,
        AgentCallbacks,
        AgentSettings,
        ReActAgent,
        ReActOptions,
        RunConfig,
        Strategy,
        StrategyOptions,
        agent_class,
        agent_settings,
        register_strategy,
    )
    from offline_agent.backends import Backend
    from offline_agent.errors import ConfigError, OfflineAgentError
    from offline_agent.eval import EvalOptions, run_evaluation
    from offline_agent.runner import Session, load_backend, open_index
    from offline_agent.steps import Trajectory, Turn


__getattr__ = lazy_names(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AGENTS",
    "PROFILES",
    "AgentCallbacks",
    "AgentSettings",
    "Backend",
    "ConfigError",
    "EvalOptions",
    "OfflineAgentError",
    "ReActAgent",
    "ReActOptions",
    "RunConfig",
    "Session",
    "Strategy",
    "StrategyOptions",
    "Trajectory",
    "Turn",
    "__version__",
    "agent_class",
    "agent_settings",
    "load_backend",
    "open_index",
    "register_strategy",
    "run_evaluation",
]
