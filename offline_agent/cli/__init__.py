"""The `offline-agent` command: a thin layer over the package.

Progress goes to stderr, results to stdout, `--json` where it makes sense. Every OfflineAgentError becomes one
line on stderr and exit code 1, here and only here; usage errors exit 2 (click), an interrupt exits 130. Text
that came in with invalid characters (incoming.py) is reported here too, once, at the end of the command.
"""

from __future__ import annotations

import sys

import click

from offline_agent import __version__, incoming
from offline_agent.errors import OfflineAgentError


class _Group(click.Group):
    """A click group that turns the package's errors into one line and a non-zero exit, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except OfflineAgentError as exc:
            click.echo(f"error: {incoming.clean(str(exc), 'an error message')}", err=True)
            ctx.exit(1)
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
    from offline_agent.cli import ask, chat, eval, grammar, index, mcp, models

    for module in (ask, chat, eval, grammar, index, mcp, models):
        for command in module.COMMANDS:
            cli.add_command(command)


def main() -> None:
    """Entry point of the console script."""
    _register()
    cli(prog_name="offline-agent")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
