"""The strategy flags `ask`, `chat`, `mcp` and `eval` had before strategies declared their own options, kept
working as hidden aliases: each is rewritten to its new form before click reads the command line, with one note
on stderr that names the new form (`--read-hop` -> `-o read_hop=true`, `--no-grammar` -> `--grammar off`).

They are not click options, so `-h` lists only the current ones; docs/options.md has the same table (a test keeps
them equal). An alias becomes exactly its new form: a verify option given to react is refused as `-o` would be.
`eval -o DIR` (the run folder's old short form) becomes `--out DIR` when DIR holds no `=`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from offline_agent.cli.sections import SectionedCommand

# Switches that were --X/--no-X flags and are now boolean options of a strategy (the option's key).
_SWITCHES = (
    "grounded",
    "answer_form",
    "exclude_refused",
    "fresh_calls",
    "search_after_refusal",
    "read_hop",
    "first_search",
    "title_boost",
)
# Flags that took a value and are now options of a strategy: the old flag -> (the option's key, its metavar).
_VALUED = {
    "--search-k": ("search_k", "N"),
    "--snippets": ("snippet", "KIND"),
    "--sentences": ("sentences", "N"),
    "--links": ("links", "N"),
    "--observation-tokens": ("observation_tokens", "N"),
    "--min-searches": ("min_searches", "N"),
    "--action-graph": ("action_graph", "FILE"),
}


def _switches() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for key in _SWITCHES:
        flag = key.replace("_", "-")
        out[f"--{flag}"] = ("-o", f"{key}=true")
        out[f"--no-{flag}"] = ("-o", f"{key}=false")
    return out


# Old flag without a value -> the tokens that replace it.
SWITCH_ALIASES: dict[str, tuple[str, ...]] = {**_switches(), "--no-grammar": ("--grammar", "off")}


def old_form(flag: str) -> str:
    """An old flag as its help wrote it (`--search-k N`)."""
    return f"{flag} {_VALUED[flag][1]}" if flag in _VALUED else flag


def new_form(flag: str, value: str | None = None) -> str:
    """The new form of an old flag (with `value`, or the old metavar, where the flag takes one)."""
    if flag in SWITCH_ALIASES:
        return " ".join(SWITCH_ALIASES[flag])
    key, metavar = _VALUED[flag]
    return f"-o {key}={metavar if value is None else value}"


def old_flags() -> list[str]:
    """Every old flag that still works, for the docs' table."""
    return [*SWITCH_ALIASES, *_VALUED]


def rewrite(args: Sequence[str], *, out_short: bool, note: Callable[[str], None]) -> list[str]:
    """`args` with every old flag in its new form (`note` is told once per flag); `out_short`: `-o DIR` without
    `=` is eval's run folder."""
    out: list[str] = []
    told: set[str] = set()
    tokens = list(args)
    i = 0

    def tell(old: str, new: str) -> None:
        if old not in told:
            told.add(old)
            note(f"note: {old} is deprecated; use {new}")

    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--":  # the rest are arguments
            out += [token, *tokens[i:]]
            break
        flag, equals, attached = token.partition("=")
        if token in SWITCH_ALIASES:
            tell(token, new_form(token))
            out += SWITCH_ALIASES[token]
        elif flag in _VALUED and (equals or i < len(tokens)):
            value = attached if equals else tokens[i]
            i += 0 if equals else 1
            tell(flag, new_form(flag, value))
            out += new_form(flag, value).split(" ", 1)
        elif out_short and token == "-o" and i < len(tokens) and "=" not in tokens[i]:
            tell("-o DIR", "--out DIR (-o now sets a strategy option: -o KEY=VALUE)")
            out += ["--out", tokens[i]]
            i += 1
        else:
            out.append(token)
    return out


class OptionsCommand(SectionedCommand):
    """A command that takes the shared run options: its old strategy flags still work (see the module doc), and its
    help lists the options in sections (sections.py)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        note = lambda line: click.echo(line, err=True)  # noqa: E731
        return super().parse_args(ctx, rewrite(args, out_short=self.name == "eval", note=note))


__all__ = ["SWITCH_ALIASES", "OptionsCommand", "new_form", "old_flags", "old_form", "rewrite"]
