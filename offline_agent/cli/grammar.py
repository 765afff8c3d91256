"""`offline-agent grammar`: print the step grammars for a tool set, and check step files against them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from offline_agent import incoming
from offline_agent.errors import ConfigError, StepParseError
from offline_agent.grammar import GbnfChecker, GrammarSpec, build_grammar
from offline_agent.tools import DEFAULT_TOOLS, default_tool_specs


def _spec(tools: str, final_only: bool, no_thought: bool) -> GrammarSpec:
    available = {spec.name: spec for spec in default_tool_specs()}
    names = [name.strip() for name in tools.split(",") if name.strip()] if tools else []
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ConfigError(f"unknown tool {unknown[0]!r}; choose from {sorted(available)}")
    spec = GrammarSpec(tools=tuple(available[name] for name in names), thought=not no_thought, allow_action=bool(names))
    return spec.final_only() if final_only else spec


_tools_option = click.option(
    "--tools",
    default=",".join(DEFAULT_TOOLS),
    show_default=True,
    help="Comma-separated tools the step may call (empty: Final only).",
)
_final_option = click.option("--final-only", is_flag=True, help="The last step's grammar: only Final is allowed.")
_thought_option = click.option("--no-thought", is_flag=True, help="Steps without a Thought line (the act strategy).")


@click.group("grammar", context_settings={"help_option_names": ["-h", "--help"]})
def grammar() -> None:
    """Show the step grammars (GBNF for the decoder, Lark for the parser) and check step files."""


@grammar.command("show")
@_tools_option
@_final_option
@_thought_option
@click.option("--format", "fmt", type=click.Choice(["both", "gbnf", "lark"]), default="both", show_default=True)
def show(tools: str, final_only: bool, no_thought: bool, fmt: str) -> None:
    """Print the GBNF and the Lark grammar of one step for a tool set.

    `--format gbnf` and `--format lark` print one grammar alone, exactly as grammars/react.gbnf and
    grammars/react.lark hold it for the default tools.
    """
    built = build_grammar(_spec(tools, final_only, no_thought))
    if fmt == "gbnf":
        click.echo(built.gbnf, nl=False)
    elif fmt == "lark":
        click.echo(built.lark, nl=False)
    else:
        click.echo(
            f"# GBNF (llama.cpp, llguidance)  sha256 {built.sha256}\n{built.gbnf}\n# Lark (parser)\n{built.lark}",
            nl=False,
        )


@grammar.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_tools_option
@_final_option
@_thought_option
@click.option(
    "--gbnf",
    "with_gbnf",
    is_flag=True,
    help="Also check each file against the GBNF (llguidance) and report disagreement.",
)
def check(files: tuple[Path, ...], tools: str, final_only: bool, no_thought: bool, with_gbnf: bool) -> None:
    """Check step files (one step each) against the Lark grammar; point at the first error.

    Prints `FILE: ok` or `FILE:LINE:COLUMN: LABEL: message` with the context; exits 1 if any file fails.
    """
    from offline_agent.parse import StepParser

    built = build_grammar(_spec(tools, final_only, no_thought))
    parser = StepParser(built)
    checker = GbnfChecker(built.gbnf) if with_gbnf else None
    failed = 0
    for path in files:
        kind = incoming.not_a_file(path)
        if kind is not None:
            click.echo(f"{path}: cannot read: it is {kind}, not a file", err=True)
            failed += 1
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            click.echo(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}", err=True)
            failed += 1
            continue
        try:
            step = parser.parse(text)
            ok = True
            message = f"{path}: ok ({'final' if step.is_final else step.action.render()})"  # type: ignore[union-attr]
        except StepParseError as exc:
            ok = False
            message = f"{path}:{exc.line}:{exc.column}: {exc.label}: {exc}\n{exc.context}".rstrip()
        if checker is not None and checker.accepts(text) != ok:
            message += "\n  the GBNF disagrees with the Lark grammar on this file"
            ok = False
        click.echo(message, file=sys.stdout if ok else sys.stderr)
        failed += not ok
    if failed:
        raise SystemExit(1)


COMMANDS = [grammar]
