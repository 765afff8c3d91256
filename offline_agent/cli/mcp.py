"""`offline-agent mcp`: serve the user's indexes to MCP clients (desktop assistants, other agents) over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from offline_agent.agents.scope import read_scope
from offline_agent.cli.options import (
    action_graph_option,
    agent_config,
    backend_choice,
    backend_options,
    control_options,
    evidence_options,
    model_options,
    scope_option,
    session_options,
)
from offline_agent.errors import ConfigError


def _check_model(model: str | None) -> None:
    """Refuse an unknown model name now, without loading (or assembling) it: the first `ask` loads it."""
    from offline_agent.models import default_model_name, load_registry

    name = model or default_model_name()
    if name in load_registry() or Path(name).expanduser().is_file():
        return
    choices = sorted(load_registry())
    raise ConfigError(f"unknown model {name!r}; choose from {choices}, or give the path of a .gguf file")


@click.command("mcp")
@click.option(
    "--index",
    "indexes",
    multiple=True,
    metavar="NAME_OR_PATH",
    help="An index to expose (repeat for more): a name from `index list`, an index folder, or a folder of "
    "documents (indexed in memory on first use). Default: every named index, or the sample corpus when there is "
    "none. The first one is what a call without `index` searches.",
)
@model_options(
    max_steps_help="Most model turns per `ask`; the last one may only answer (see --early-stopping).",
    max_seconds_help="Stop an `ask` after this many seconds (stop reason timeout).",
)
@session_options(corpus=False)
@backend_options()
@control_options()
@evidence_options()
@scope_option()
@action_graph_option()
@click.pass_context
def mcp(
    ctx: click.Context,
    indexes: tuple[str, ...],
    model: str | None,
    agent: str,
    max_steps: int,
    max_seconds: float | None,
    temperature: float,
    seed: int,
    max_tokens: int,
    context_size: int | None,
    no_grammar: bool,
    early_stopping: str,
    grounded: bool,
    answer_form: bool,
    min_searches: int,
    first_search: bool,
    exclude_refused: bool,
    fresh_calls: bool,
    search_after_refusal: bool,
    read_hop: bool,
    samples: int,
    budget_hint: bool,
    search_k: int,
    snippet: str,
    sentences: int,
    title_boost: bool,
    links: int,
    observation_tokens: int,
    scope: str | None,
    action_graph: str | None,
    **backend_params: Any,
) -> None:
    """Serve your indexes as a Model Context Protocol server over stdio (for desktop assistants and agents).

    Tools: search (ranked passages with title, source, score and text; arguments query, k, index), ask (the
    agent answers with the model and options given here; returns the answer, the stop reason and the
    trajectory) and list_indexes. Nothing but stdin and stdout is used: no port is opened, nothing leaves the
    machine. The model loads on the first ask, so clients that only search never wait for it. Needs the `mcp`
    package: pip install 'offline-agent[mcp]'.

    \b
    Example (an MCP client's server entry):
      {"command": "offline-agent", "args": ["mcp", "--index", "notes"]}
    """
    from offline_agent.agents import agent_class
    from offline_agent.agents.knowagent import check_action_graph
    from offline_agent.mcp_server import AgentSettings, IndexSet, OfflineAgentTools, require_mcp, serve

    require_mcp()
    backend = backend_choice(ctx, {**backend_params, "model": model, "context_size": context_size, "seed": seed})
    config = agent_config(ctx.params, scope=read_scope(scope))
    check_action_graph(agent_class(agent), action_graph)
    _check_model(model)
    chosen = IndexSet(indexes)
    settings = AgentSettings(model=model, agent=agent, config=config, backend=backend)
    click.echo(f"offline-agent mcp: serving {', '.join(chosen.names())} over stdio", err=True)
    serve(OfflineAgentTools(chosen, settings))


COMMANDS = [mcp]

__all__ = ["COMMANDS", "mcp"]
