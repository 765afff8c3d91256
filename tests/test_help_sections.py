"""`-h` of the commands that answer questions lists their options in sections (cli/sections.py), each option once:
the corpus, the strategy, the limits, the model and backend, each backend's own options under its name, the output.
A command that takes the run options gets their sections with them."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner
from support import ROOT

from offline_agent.cli import _register, cli
from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RUN_SECTIONS, run_options
from offline_agent.cli.sections import BACKEND_SECTIONS, OTHER, SECTIONS, SERVER, place

COMMANDS = ["ask", "chat", "eval", "mcp"]
FLAG = re.compile(r"(?<![\w-])(--?[a-z][\w-]*)")


def help_text(*args: str, command: click.Command | None = None) -> str:
    if command is None:
        _register()
        command = cli
    result = CliRunner().invoke(command, [*args, "--help"], prog_name="offline-agent", terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.stdout


def sections(text: str) -> list[tuple[str, list[list[str]]]]:
    """(section title, the flags of each entry) in the order printed; an entry is a line that starts with an option
    (its flags are those of its first column)."""
    out: list[tuple[str, list[list[str]]]] = []
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line) and not line.startswith("Usage:"):
            out.append((line[:-1], []))
        elif out and re.match(r"^  -", line):
            first_column = re.split(r"\s{2,}", line.strip())[0]
            out[-1][1].append(FLAG.findall(first_column))
    return out


def command_options(name: str) -> set[str]:
    _register()
    command = cli.get_command(click.Context(cli), name)
    options = [param for param in command.params if isinstance(param, click.Option)]
    return {flag for option in options for flag in (*option.opts, *option.secondary_opts)}


@pytest.mark.parametrize("name", COMMANDS)
def test_each_option_is_listed_once_in_a_named_section(name: str) -> None:
    printed = sections(help_text(name))
    titles = [title for title, _ in printed]
    assert titles == [title for title in SECTIONS if title in titles], titles  # in the sections' order
    assert OTHER not in titles, printed[-1]  # every option was placed
    flags = [flag for _, entries in printed for entry in entries for flag in entry]
    assert len(flags) == len(set(flags)), sorted(flag for flag in flags if flags.count(flag) > 1)
    assert set(flags) == command_options(name) | {"-h", "--help"}


def test_ask_help_shows_at_most_20_options_before_the_backends() -> None:
    printed = sections(help_text("ask"))
    before = []
    for title, entries in printed:
        if title in BACKEND_SECTIONS:
            break
        before += entries
    assert 15 <= len(before) <= 20, len(before)
    # corpus, strategy, limits, model and backend (ask has no server section: that is serve's)
    assert [title for title, _ in printed][:4] == [section for section in SECTIONS if section != SERVER][:4]
    backends = {title: [entry[0] for entry in entries] for title, entries in printed if title in BACKEND_SECTIONS}
    assert "--gpu-layers" in backends["Backend llamacpp"] and "--server-url" in backends["Backend http"]
    assert backends["Backend transformers"] == ["--device"]


def test_eval_puts_its_own_backend_options_under_their_backends() -> None:
    printed = dict(sections(help_text("eval")))
    assert ["--parallel"] in printed["Backend llamacpp"] and ["--concurrency"] in printed["Backend http"]
    assert ["--out"] in printed["Output"] and ["--setting"] in printed["Corpus and questions"]


def test_the_readme_flags_you_will_use_most_are_options_of_ask() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("The flags you will use most", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", block))
    assert {"--max-steps", "--model", "--threads", "--json"} <= named
    assert named <= command_options("ask"), named - command_options("ask")


def test_a_new_command_that_takes_the_run_options_gets_their_sections() -> None:
    @click.command("probe", cls=OptionsCommand)
    @run_options(max_steps_help="Most turns.", max_seconds_help="Stop after.")
    @place({"port": "Output"})
    @click.option("--port", type=int, help="A port.")
    @click.option("--unplaced", is_flag=True, help="Nobody put this one anywhere.")
    def probe(run: object, port: int | None, unplaced: bool) -> None:
        """A command as a new one would be written."""

    run_params = {param.name for param in probe.params} - {"port", "unplaced"}
    assert run_params == set(RUN_SECTIONS)  # every run option has its section in the table
    printed = sections(help_text(command=probe))
    assert [title for title, _ in printed][-2:] == ["Output", OTHER]
    assert printed[-1][1] == [["--unplaced"]] and ["--port"] in printed[-2][1]


def test_an_unknown_section_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown help section"):
        place({"port": "Outputs"})


def test_serve_lists_where_it_listens_in_a_section_of_its_own() -> None:
    printed = dict(sections(help_text("serve")))
    assert [entry[0] for entry in printed["Server"]] == ["--host", "--port", "--api-key", "--cors", "--queue"]
    assert "Other options" not in printed and any(entry[0] == "--show-sources" for entry in printed["Output"])
