"""Named settings profiles, and the one object a command hands down: which strategy runs, with which options.

A profile names a strategy and values for its options; the options it does not name keep their strategy's
defaults, so each default lives in one place (the strategy's options dataclass, options.py). Two ship:
- `answer`: the product's defaults, what `ask`, `chat`, `eval` and `mcp` run when the user names nothing else:
  the verify strategy, grounded Finals in the form the question asks for, and evidence a 1.5B model can read
  (best sentences of 4 passages and the documents they name). The support check (an abstention where what was
  read does not support the Final) is not in it yet: `-o support_check=true` until it is measured to pay. These
  measured best on HotpotQA dev.
- `plain`: every option at its default: react's loop, nothing checked, passage heads (what the scripted tests
  and the recorded runs pin).
A profile's values apply to the options the chosen strategy has (the `answer` profile with `--agent react` is
react with grounded answers and sentence evidence; verify's checks are not react's to take).

`AgentSettings` is what runs: the strategy's name, the profile its options started from, the run config
(run.py) and the options (options.py). `agent_settings(...)` makes one from names and values, as the CLI does;
the profile's name and the options are recorded on every trajectory and in an evaluation's config.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from offline_agent.agents.options import StrategyOptions, make_options, option_infos
from offline_agent.agents.registry import agent_class
from offline_agent.agents.run import AgentCallbacks, RunConfig
from offline_agent.errors import ConfigError

if TYPE_CHECKING:
    from offline_agent.agents.base import Strategy
    from offline_agent.backends.base import Backend
    from offline_agent.tools.base import ToolRegistry


@dataclass(frozen=True)
class Profile:
    """Named settings: a strategy, and values for the options of whichever strategy runs under it."""

    name: str
    help: str
    agent: str
    options: Mapping[str, Any] = field(default_factory=dict)


ANSWER = "answer"
PLAIN = "plain"
DEFAULT_PROFILE = ANSWER
PROFILES: dict[str, Profile] = {}


def register_profile(profile: Profile) -> Profile:
    """Make `profile` available by name to `--profile` and `agent_settings`."""
    if profile.name in PROFILES and PROFILES[profile.name] != profile:
        raise ConfigError(f"profile {profile.name!r} is registered already")
    PROFILES[profile.name] = profile
    return profile


def profile_named(name: str) -> Profile:
    """The profile registered under `name`."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown profile {name!r}; choose from {sorted(PROFILES)}") from None


register_profile(
    Profile(
        ANSWER,
        "The product's defaults (best on HotpotQA dev): verify, grounded Finals in the form asked, sentence evidence.",
        agent="verify",
        options={
            "grounded": True,
            "answer_form": True,
            "search_k": 4,
            "snippet": "sentences",
            "sentences": 2,
            "section_sentences_after": 1,
            "section_sentences": 3,
            "section_defaults": True,
            "search_with_question": True,
            "links": 4,
            "observation_tokens": 600,
            "exclude_refused": True,
            "read_hop": True,
        },
    )
)
register_profile(
    Profile(PLAIN, "Every option at its strategy's default: react's loop, nothing checked, passage heads.", "react")
)


@dataclass(frozen=True)
class AgentSettings:
    """What runs: a strategy by name, the profile its options started from, the run config and its options."""

    agent: str = "react"
    profile: str = PLAIN
    config: RunConfig = field(default_factory=RunConfig)
    options: StrategyOptions = None  # type: ignore[assignment]  # None: the strategy's defaults

    def __post_init__(self) -> None:
        kind = agent_class(self.agent).options_type
        if self.options is None:
            object.__setattr__(self, "options", kind())
        elif type(self.options) is not kind:
            raise ConfigError(f"strategy {self.agent} takes {kind.__name__}, not {type(self.options).__name__}")

    def build(self, backend: Backend, tools: ToolRegistry, callbacks: AgentCallbacks | None = None) -> Strategy:
        """The strategy, ready to run a question."""
        return agent_class(self.agent)(backend, tools, self.config, callbacks, self.options)

    def with_config(self, **changes: Any) -> AgentSettings:
        """The same settings with some of the run config changed (max_steps=4, scope=...)."""
        return replace(self, config=replace(self.config, **changes))

    def flat(self) -> dict[str, Any]:
        """The run config and the options in one mapping (config.json's `agent_config`)."""
        return {**asdict(self.config), **self.options.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "profile": self.profile,
            "config": asdict(self.config),
            "options": self.options.to_dict(),
        }


RUN_KEYS = tuple(item.name for item in fields(RunConfig))


def agent_settings(
    agent: str | None = None,
    profile: str = DEFAULT_PROFILE,
    options: Mapping[str, Any] | None = None,
    **values: Any,
) -> AgentSettings:
    """The settings of `agent` (default: the profile's strategy) under `profile`: the profile's option values,
    then `options` (typed, or strings as `-o KEY=VALUE` gives them), then `values`, each either a run setting
    (max_steps=6, seed=3, scope=...) or an option of the strategy (read_hop=False). A key that is neither is a
    ConfigError naming the valid ones."""
    chosen = profile_named(profile)
    name = agent or chosen.agent
    kind = agent_class(name).options_type
    keys = option_infos(kind)
    run = {key: value for key, value in values.items() if key in RUN_KEYS}
    unknown = sorted(key for key in values if key not in RUN_KEYS and key not in keys)
    if unknown:
        raise ConfigError(
            f"unknown setting {unknown[0]!r} for strategy {name}; run settings: {sorted(RUN_KEYS)}; "
            f"options: {sorted(keys)}"
        )
    takes = agent_class(name).profile_options
    merged = {key: value for key, value in chosen.options.items() if key in keys and (takes is None or key in takes)}
    merged.update(options or {})
    merged.update({key: value for key, value in values.items() if key in keys})
    made = make_options(kind, merged, owner=f"strategy {name}")
    agent_class(name).check_options(made)
    return AgentSettings(name, chosen.name, RunConfig(**run), made)


__all__ = [
    "ANSWER",
    "DEFAULT_PROFILE",
    "PLAIN",
    "PROFILES",
    "AgentSettings",
    "Profile",
    "agent_settings",
    "profile_named",
    "register_profile",
]
