"""`offline-agent strategies`: the strategies, each with its options (key, type, default, help), and the profiles.

The same listing for one strategy is `ask --agent X --help-options` (cli/options.py calls `strategy_lines`). Every
value shown comes from the options dataclasses and the profiles, so the listing cannot drift from what runs.
"""

from __future__ import annotations

import json
from typing import Any

import click


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _summary(strategy: type) -> str:
    return " ".join((strategy.__doc__ or "").split("\n\n")[0].split())


def _declaring(name: str) -> str:
    """The registered strategy whose class declares `name`'s options type (`name` itself, or one it extends)."""
    from offline_agent.agents import AGENTS

    kind = AGENTS[name].options_type
    for parent in AGENTS[name].__mro__:
        if parent.__dict__.get("options_type") is kind:
            return next((other for other, cls in AGENTS.items() if cls is parent), name)
    return name


def strategy_lines(agent: str, profile: str | None = None) -> list[str]:
    """`agent`'s description and a table of its options; with `profile`, a column of that profile's values."""
    from offline_agent.agents import agent_class, agent_settings, option_infos

    strategy = agent_class(agent)
    infos = option_infos(strategy.options_type)
    chosen = agent_settings(agent, profile).options.to_dict() if profile else {}
    differs = {key: _shown(value) for key, value in chosen.items() if value != infos[key].default}
    rows = [("option", "type", "default", *([profile] if differs else []), "help")]
    for key, info in infos.items():
        kind = "|".join(info.choices) if info.choices else info.type
        rows.append((key, kind, _shown(info.default), *([differs.get(key, "")] if differs else []), info.help))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    table = [
        "  " + "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
    lead = f"{agent}: {_summary(strategy)}"
    how = "options (-o KEY=VALUE" + (
        f"; the {profile} column: the profile's value where it differs):" if differs else "):"
    )
    return [lead, how, *table] if infos else [lead, "(no options)"]


def strategies_data() -> dict[str, Any]:
    """Every strategy with its options, and every profile, as JSON values."""
    from offline_agent.agents import AGENTS, PROFILES, option_infos

    return {
        "strategies": {
            name: {
                "description": _summary(strategy),
                "options": [
                    {"key": i.key, "type": i.type, "default": i.default, "help": i.help, "takes": i.expects()}
                    for i in option_infos(strategy.options_type).values()
                ],
            }
            for name, strategy in sorted(AGENTS.items())
        },
        "profiles": {
            name: {"help": p.help, "agent": p.agent, "options": dict(p.options)} for name, p in sorted(PROFILES.items())
        },
    }


@click.command("strategies")
@click.option("--profile", default=None, help="Also show this profile's values (answer, plain).")
@click.option("--json", "as_json", is_flag=True, help="Print the strategies, their options and the profiles as JSON.")
def strategies(profile: str | None, as_json: bool) -> None:
    """List the strategies (`--agent`) with their options (`-o KEY=VALUE`), and the settings profiles (`--profile`).

    \b
    Examples:
      offline-agent strategies
      offline-agent ask "..." --agent verify -o read_hop=false
      offline-agent ask --agent knowagent --help-options
    """
    from offline_agent.agents import AGENTS, DEFAULT_PROFILE, PROFILES, profile_named

    if profile is not None:
        profile_named(profile)  # an unknown name fails here, naming the profiles
    if as_json:
        click.echo(json.dumps(strategies_data(), indent=2, sort_keys=True))
        return
    for name in sorted(AGENTS):
        owner = _declaring(name)
        if owner == name:
            click.echo("\n".join(strategy_lines(name, profile)) + "\n")
        else:  # the options of the strategy it extends: listed there
            click.echo(f"{name}: {_summary(AGENTS[name])}\noptions: those of {owner} (-o KEY=VALUE)\n")
    click.echo("profiles (--profile):")
    for name, chosen in sorted(PROFILES.items()):
        default = " (default)" if name == DEFAULT_PROFILE else ""
        values = ", ".join(f"{key}={_shown(value)}" for key, value in chosen.options.items()) or "no values"
        click.echo(f"  {name}{default}: {chosen.help} Strategy {chosen.agent}; {values}.")


COMMANDS = [strategies]

__all__ = ["COMMANDS", "strategies", "strategies_data", "strategy_lines"]
