"""Help in sections: the options of a command that answers questions (`ask`, `chat`, `eval`, `mcp`, `serve`) listed
under headings a person can scan, each option once: the corpus and questions; where `serve` listens; the strategy
and its `-o` options; the limits and sampling; the model and backend, then each backend's own options under its
name; the output.

An option is placed by its parameter's name with `place`: the run options in one table beside them (options.py),
so a command that takes them gets their sections with them, and a command's own options in a table on the command.
`SectionedCommand` prints the sections in the order of SECTIONS; an option no one placed is listed last, under
"Other options".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

CORPUS = "Corpus and questions"
SERVER = "Server"
STRATEGY = "Strategy and its -o options"
LIMITS = "Limits and sampling"
MODEL = "Model and backend"
LLAMACPP = "Backend llamacpp"
TRANSFORMERS = "Backend transformers"
LOCAL = "Backends llamacpp and transformers"
HTTP = "Backend http"
OUTPUT = "Output"
OTHER = "Other options"
SECTIONS = (CORPUS, SERVER, STRATEGY, LIMITS, MODEL, LLAMACPP, TRANSFORMERS, LOCAL, HTTP, OUTPUT, OTHER)
BACKEND_SECTIONS = (LLAMACPP, TRANSFORMERS, LOCAL, HTTP)

_ATTRIBUTE = "help_section"


def place(sections: Mapping[str, str]) -> Decorator:
    """A decorator placing the click options already on the function in a section by their parameter's name
    (`sections`: name -> section); the others are left as they are."""
    unknown = set(sections.values()) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown help section {sorted(unknown)}; choose from {list(SECTIONS)}")

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for param in getattr(function, "__click_params__", ()):
            if param.name in sections:
                setattr(param, _ATTRIBUTE, sections[param.name])
        return function

    return apply


def section_of(param: click.Parameter) -> str:
    """The section `param` is listed in (OTHER where no one placed it)."""
    return getattr(param, _ATTRIBUTE, None) or OTHER


def help_sections(command: click.Command, ctx: click.Context) -> list[tuple[str, list[tuple[str, str]]]]:
    """The command's options as (section, help rows), in SECTIONS order, without empty sections; -h goes with the
    output. Arguments are not listed, as in click's own help."""
    rows: dict[str, list[tuple[str, str]]] = {section: [] for section in SECTIONS}
    help_option = command.get_help_option(ctx)
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is not None:
            # click before 8.2 builds a new help option at each call: compare what it is, not its identity
            is_help = help_option is not None and (param.name, param.opts) == (help_option.name, help_option.opts)
            rows[OUTPUT if is_help else section_of(param)].append(record)
    return [(section, rows[section]) for section in SECTIONS if rows[section]]


class SectionedCommand(click.Command):
    """A click command whose --help lists its options in sections (see the module doc)."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for section, rows in help_sections(self, ctx):
            with formatter.section(section):
                formatter.write_dl(rows)


__all__ = [
    "BACKEND_SECTIONS",
    "CORPUS",
    "HTTP",
    "LIMITS",
    "LLAMACPP",
    "LOCAL",
    "MODEL",
    "OTHER",
    "OUTPUT",
    "SECTIONS",
    "STRATEGY",
    "SectionedCommand",
    "TRANSFORMERS",
    "help_sections",
    "place",
    "section_of",
]
