"""The README stays true: every command in it runs, its Python example runs, its links and command names exist.

Which lines are commands: in a ```bash, ```sh or ```console block, every line that is not blank and not a comment,
after a leading `$ ` and a trailing `# comment` are cut (a line ending in a backslash goes on on the next). Each is
checked by its first word, and a first word with no rule fails the test (a new kind of command needs a rule here):

- `offline-agent ...`, or a pipe into it (`printf ... | offline-agent chat -q`), is run for real with bash, in a
  sandbox: the current folder is a temporary one where `corpora` is this checkout's, HOME is a temporary folder
  whose `~/notes` holds a tiny corpus, OFFLINE_AGENT_HOME is its own, stdin is empty (so `chat` and `mcp` end at
  once), and `offline-agent` on PATH is a wrapper around this checkout's CLI. For the commands that run a model
  (ask, chat, eval, mcp) the wrapper appends small limits: `--model` the test model (smollm2-135m-instruct),
  `--max-steps 2`, `--threads 1`, and `--limit 1` for eval; click keeps an option's last value, so these win over
  the README's own. The commands run in the README's order (an index is built before it is searched). Each must
  exit 0 without a traceback; `ask` may also exit 3, the agent stopping without an answer, which the tiny model
  may do. `models install` is not run (it installs packages): it is checked to be a command.
- `offline-agent serve ...` is started in the same sandbox (on a free port: the wrapper adds `--port 0`) and the
  `curl` lines and the ```python block of the Serve section run against it (their `http://127.0.0.1:8000` made the
  server's address); then SIGTERM must stop it with exit 0.
- `make X`: the Makefile has the target X (make run and make test install things, so they are not run here).
- `pip install ...`: an `offline-agent[EXTRA]` names an extra of pyproject.toml; other packages are not checked.
- `. .venv/bin/activate`: scripts/install.sh makes `.venv`.

The ```python block of the Python section runs in a subprocess with the test model as the default model
(OFFLINE_AGENT_MODEL) and, as the commands' small limits, its `max_steps=N` made `max_steps=2`. The model-running
parts carry the `model` marker.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import click
import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from support import ROOT, TINY_CORPUS, cli_env

README = ROOT / "README.md"
TEST_MODEL = "smollm2-135m-instruct"
MODEL_COMMANDS = {"ask", "chat", "eval", "mcp", "serve"}
NOT_RUN = {("models", "install")}  # installs packages
SERVED = ("serve",)  # started, then talked to by the curl lines and the Serve section's Python (see the docstring)
README_ADDRESS = "http://127.0.0.1:8000"
SHELL_BLOCK = re.compile(r"^```(bash|sh|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
DOC_LINK = re.compile(r"\]\(((?:docs|benchmarks)/[^)#\s]+)(?:#[^)]*)?\)")
NAMED_COMMAND = re.compile(r"`offline-agent ([a-z][a-z-]*)")  # in inline code

WRAPPER = """#!{python}
import sys

sys.path.insert(0, {root!r})
from offline_agent.cli import main

args = sys.argv[1:]
if args and args[0] in {model_commands!r}:
    args += ["--model", {model!r}, "--max-steps", "2", "--threads", "1"]
    if args[0] == "eval":
        args += ["--limit", "1"]
    if args[0] == "serve":
        args += ["--port", "0"]
sys.argv = ["offline-agent", *args]
main()
"""


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def readme_commands() -> list[str]:
    """The README's shell command lines, in order (see the module docstring for the rule)."""
    commands: list[str] = []
    for block in SHELL_BLOCK.finditer(readme_text()):
        pending = ""
        for raw in block.group(2).splitlines():
            line = pending + raw.strip().removeprefix("$ ")
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            line = strip_comment(line)
            if line:
                commands.append(line)
    return commands


def strip_comment(line: str) -> str:
    """`line` without its trailing `# comment` (a # inside quotes, or inside a word, stays)."""
    quote = None
    for position, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or line[position - 1].isspace()):
            return line[:position].strip()
    return line.strip()


def agent_words(command: str) -> list[str]:
    """The words after `offline-agent` in a command (or in the part of a pipe that runs it)."""
    for part in command.split("|"):
        words = shlex.split(part)
        if words and words[0] == "offline-agent":
            return words[1:]
    return []


def kind(command: str) -> str:
    first = shlex.split(command)[0]
    if agent_words(command):
        return "offline-agent"
    return first


def cli_group() -> click.Group:
    from offline_agent.cli import _register, cli

    _register()
    return cli


# ---------------------------------------------------------------- the README's shape


def test_the_readme_is_short() -> None:
    lines = readme_text().splitlines()
    assert len(lines) <= 260, f"README.md has {len(lines)} lines; move a topic to a page of its own under docs/"


def test_the_readme_starts_with_the_two_setup_commands() -> None:
    """The project's rule (and .ci/run, which runs the second): set-up is the README's first two commands."""
    assert readme_commands()[:2] == ["make run", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_docs_link_points_to_a_file() -> None:
    links = DOC_LINK.findall(readme_text())
    assert links, "the README links no page under docs/"
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, missing


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = set(DOC_LINK.findall(readme_text()))
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set()


def test_every_named_command_is_real() -> None:
    """Each `offline-agent NAME` the README writes, in its commands and in inline code, is a command; a group's
    subcommand (models list) is one of that group's."""
    cli = cli_group()
    ctx = click.Context(cli)
    names = set(NAMED_COMMAND.findall(readme_text())) | {agent_words(c)[0] for c in readme_commands() if agent_words(c)}
    assert names and names <= set(cli.list_commands(ctx)), names - set(cli.list_commands(ctx))
    for command in readme_commands():
        words = agent_words(command)
        group = cli.get_command(ctx, words[0]) if words else None
        if isinstance(group, click.Group) and len(words) > 1 and not group.invoke_without_command:
            assert words[1] in group.list_commands(ctx), command


def test_every_command_line_has_a_rule() -> None:
    kinds = {kind(command) for command in readme_commands()}
    assert kinds <= {"offline-agent", "make", "pip", ".", "curl"}, kinds


def test_the_commands_that_install_are_there() -> None:
    """make targets, pip extras and the virtual environment the README names exist (they are not run here)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    cli = cli_group()
    ctx = click.Context(cli)
    for command in readme_commands():
        words = shlex.split(command)
        if words[0] == "make":
            assert re.search(rf"^{re.escape(words[1])}:", makefile, re.MULTILINE), command
        elif words[0] == "pip":
            for name in re.findall(r"offline-agent\[([a-z,]+)\]", command):
                assert set(name.split(",")) <= set(extras), command
        elif words[0] == ".":
            assert words[1] == ".venv/bin/activate" and ".venv" in (ROOT / "scripts/install.sh").read_text()
        elif tuple(agent_words(command)[:2]) in NOT_RUN:
            group = cli.get_command(ctx, agent_words(command)[0])
            assert isinstance(group, click.Group) and agent_words(command)[1] in group.list_commands(ctx)


# ---------------------------------------------------------------- the commands, run


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A folder to run the README's commands in, its environment, and the tiny ~/notes corpus."""
    root = tmp_path_factory.mktemp("readme")
    home, work, bin_dir = root / "home", root / "work", root / "bin"
    for folder in (home / "notes", work, bin_dir):
        folder.mkdir(parents=True)
    for name, text in TINY_CORPUS.items():
        (home / "notes" / name).write_text(text, encoding="utf-8")
    (work / "corpora").symlink_to(ROOT / "corpora")
    wrapper = bin_dir / "offline-agent"
    wrapper.write_text(
        WRAPPER.format(python=sys.executable, root=str(ROOT), model_commands=MODEL_COMMANDS, model=TEST_MODEL),
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    env = cli_env(root / "agent-home")
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        OFFLINE_AGENT_MODEL=TEST_MODEL,
        OFFLINE_AGENT_THREADS="1",
    )
    env.pop("OFFLINE_AGENT_BACKEND", None)
    return {"cwd": work, "env": env}


RUN = [command for command in readme_commands() if kind(command) == "offline-agent"]


@pytest.mark.model
@pytest.mark.parametrize(
    "command", [c for c in RUN if tuple(agent_words(c)[:2]) not in NOT_RUN and agent_words(c)[0] not in SERVED]
)
def test_the_readme_command_runs(command: str, sandbox: dict[str, object]) -> None:
    result = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=sandbox["cwd"],
        env=sandbox["env"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    allowed = {0, 3} if agent_words(command)[0] == "ask" else {0}
    assert result.returncode in allowed and "Traceback" not in result.stderr, (
        f"{command}\nexit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    )


@pytest.mark.model
def test_the_python_example_runs(sandbox: dict[str, object]) -> None:
    section = readme_text().split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = PYTHON_BLOCK.findall(section)
    assert len(blocks) == 1
    code, limited = re.subn(r"\bmax_steps=\d+", "max_steps=2", blocks[0])
    assert limited, "the example sets no max_steps for the test to bound"
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
        cwd=sandbox["cwd"],
        env=sandbox["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("{") and '"question": "In which year was she born?"' in lines[-1], lines[-3:]


@pytest.mark.model
def test_the_serve_section_runs_against_the_server(sandbox: dict[str, object]) -> None:
    """`serve` started as the README starts it; its curl lines and its Python line get answers; SIGTERM ends it."""
    pytest.importorskip("openai", reason="the openai client is not installed (the test extra has it)")
    started = [command for command in RUN if agent_words(command)[0] in SERVED]
    curls = [command for command in readme_commands() if kind(command) == "curl"]
    section = readme_text().split("\n## Serve", 1)[1].split("\n## ", 1)[0]
    assert len(started) == 1 and curls and README_ADDRESS in section
    server = subprocess.Popen(
        ["bash", "-c", f"exec {started[0]}"],
        cwd=sandbox["cwd"],
        env=sandbox["env"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = []
        assert server.stderr is not None
        for line in server.stderr:
            seen.append(line)
            found = re.search(r"the page and the API at (http://\S+)", line)
            if found:
                address = found.group(1)
                break
        else:
            raise AssertionError("serve did not start:\n" + "".join(seen))
        for command in curls:
            result = subprocess.run(
                ["bash", "-c", command.replace(README_ADDRESS, address)],
                cwd=sandbox["cwd"], env=sandbox["env"], capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert result.returncode == 0 and '"offline_agent"' in result.stdout, (
                command,
                result.stdout,
                result.stderr,
            )
        (code,) = PYTHON_BLOCK.findall(section)
        result = subprocess.run(
            [sys.executable, "-c", code.replace(README_ADDRESS, address)],
            cwd=sandbox["cwd"], env=sandbox["env"], capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0 and result.stdout.strip(), result.stderr[-3000:]
    finally:
        server.terminate()
        status = server.wait(120)
    rest = server.stderr.read() if server.stderr else ""
    assert status == 0 and "Traceback" not in rest, rest
