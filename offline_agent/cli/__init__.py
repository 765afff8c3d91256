"""The `offline-agent` command: a thin layer over the package.

Progress goes to stderr, results to stdout, `--json` where it makes sense. Every OfflineAgentError becomes one
line on stderr and exit code 1, here and only here; usage errors exit 2 (click), an interrupt exits 130. Text
that came in with invalid characters (incoming.py) is reported here too, once, at the end of the command.
"""

from __future__ import annotations

import importlib
import sys

import click

from offline_agent import incoming
from offline_agent._version import __version__
from offline_agent.errors import OfflineAgentError
from offline_agent.terminal import shown_name

# The module of each command. A command's module is imported when the command is asked for: importing them all
# (the agents and their grammars with `ask`) cost `index` and `search` most of a second at every start.
COMMAND_MODULES = {
    "ask": "ask",
    "chat": "chat",
    "eval": "eval",
    "report": "eval",
    "grammar": "grammar",
    "index": "index",
    "search": "index",
    "strategies": "strategies",
    "mcp": "mcp",
    "serve": "serve",
    "models": "models",
}


class _Group(click.Group):
    """A click group that turns the package's errors into one line and a non-zero exit, never a traceback, and
    loads a command's module only when the command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in COMMAND_MODULES:
            module = importlib.import_module(f"offline_agent.cli.{COMMAND_MODULES[name]}")
            for loaded in module.COMMANDS:
                self.add_command(loaded)
            command = super().get_command(ctx, name)
        return command

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except OfflineAgentError as exc:
            # An error quotes what a user typed or a file holds (a path with an OSC sequence in its name): escaped.
            click.echo(f"error: {shown_name(incoming.clean(str(exc), 'an error message'))}", err=True)
            ctx.exit(1)
        except click.ClickException as exc:  # a usage error quotes the value given: the same
            exc.message = shown_name(incoming.clean(exc.message, "an error message"))
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        finally:
            incoming.report(lambda note: click.echo(note, err=True))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="offline-agent")
def cli() -> None:
    """Grammar-constrained question-answering agents on local models, with no network.

    Every model turn is forced by a grammar into `Thought: ...` then `Action: tool[arg]` or `Final: answer`,
    and the search tool is a BM25 index over your own files.
    """


def _register() -> None:
    """Load every command now (the console script loads each when it is asked for)."""
    for name in sorted(COMMAND_MODULES):
        cli.get_command(click.Context(cli), name)


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="offline-agent")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
