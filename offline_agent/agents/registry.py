"""The strategy registry: names to strategy classes, for `--agent`, runner.Session, the evaluation and profiles.

It sits below the package's `__init__` (which registers the built-in strategies) so that modules of the package
that look a strategy up by name (settings.py) need not import the package that imports them.
"""

from __future__ import annotations

from offline_agent.agents.base import Strategy
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


def agent_class(name: str) -> type[Strategy]:
    """The agent strategy registered under `name`."""
    try:
        return AGENTS[name]
    except KeyError:
        raise ConfigError(f"unknown agent {name!r}; choose from {sorted(AGENTS)}") from None


__all__ = ["AGENTS", "agent_class", "register_strategy"]
