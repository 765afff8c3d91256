"""`offline-agent mcp`: serve the user's indexes to MCP clients (desktop assistants, other agents) over stdio."""

from __future__ import annotations

from pathlib import Path

import click

from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RunChoice, run_options
from offline_agent.cli.sections import CORPUS, place
from offline_agent.errors import ConfigError


def _check_model(model: str | None) -> None:
    """Refuse an unknown model name now, without loading (or assembling) it: the first `ask` loads it."""
    from offline_agent.models import default_model_name, load_registry

    name = model or default_model_name()
    if name in load_registry() or Path(name).expanduser().is_file():
        return
    choices = sorted(load_registry())
    raise ConfigError(f"unknown model {name!r}; choose from {choices}, or give the path of a .gguf file")


@click.command("mcp", cls=OptionsCommand)
@place({"indexes": CORPUS})
@click.option(
    "--index",
    "indexes",
    multiple=True,
    metavar="NAME_OR_PATH",
    help="An index to expose (repeat for more): a name from `index list`, an index folder, or a folder of "
    "documents (indexed in memory on first use). Default: every named index, or the sample corpus when there is "
    "none. The first one is what a call without `index` searches.",
)
@run_options(
    max_steps_help="Most model turns per `ask`; the last one may only answer (see --early-stopping).",
    max_seconds_help="Stop an `ask` after this many seconds (stop reason timeout).",
    corpus=False,
)
def mcp(indexes: tuple[str, ...], run: RunChoice) -> None:
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
    from offline_agent.mcp_server import IndexSet, OfflineAgentTools, ServerSettings, require_mcp, serve

    require_mcp()
    _check_model(run.model)
    chosen = IndexSet(indexes)
    settings = ServerSettings(model=run.model, backend=run.backend, settings=run.settings)
    click.echo(f"offline-agent mcp: serving {', '.join(chosen.names())} over stdio", err=True)
    serve(OfflineAgentTools(chosen, settings))


COMMANDS = [mcp]

__all__ = ["COMMANDS", "mcp"]
