"""`offline-agent chat`: many questions on one loaded model and corpus, each able to refer to the turns before.

The model and corpus load once; questions are read from stdin one line at a time, so a chat can be typed or piped.
Every question is a fresh run of the agent with the earlier turns handed in as history; the agent's `context_for`
picks which of them the prompt shows (the last 3 answered, by default), so the prompt does not grow with the chat.

Limits: the history lives in memory only (`--trace` keeps every turn's trajectory on disk); a question is one line;
Ctrl-C while a question runs abandons that question (it is not added to the history) and the chat goes on, and so
does a question refused with an error line (one longer than a quarter of the context window, say).
"""

from __future__ import annotations

import sys
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

import click

from offline_agent import incoming, jsonio
from offline_agent.agents import RunConfig
from offline_agent.backends.registry import setup_time_limit
from offline_agent.cli.ask import (
    EXIT_TRACE_FAILED,
    LiveView,
    no_answer_line,
    open_session,
    stop_line,
    write_trace_or_report,
)
from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RunChoice, run_options
from offline_agent.cli.sections import OUTPUT, place
from offline_agent.errors import OfflineAgentError
from offline_agent.outputs import check_writable_file
from offline_agent.runner import check_question_length
from offline_agent.sources import ABSTAINED, attach_sources, format_sources
from offline_agent.steps import Trajectory, Turn
from offline_agent.terminal import shown

CHAT_COMMANDS = {
    "/history": "list the turns so far",
    "/reset": "forget them",
    "/quit": "end the chat",
}


@dataclass(eq=False)
class ChatLoop:
    """Reads lines, runs commands or asks the session, and keeps the turns; output goes through click.echo."""

    session: Any
    config: RunConfig
    _: KW_ONLY
    as_json: bool = False
    trace: Path | None = None
    quiet: bool = False
    history: list[Turn] = field(default_factory=list, init=False)
    trace_failures: int = field(default=0, init=False)

    def run(self, stream: Any, *, interactive: bool) -> None:
        """Answer each line of `stream` until /quit, end of input, or Ctrl-C at the prompt."""
        while True:
            if interactive:
                click.echo("> ", err=True, nl=False)
            try:
                line = stream.readline()
            except KeyboardInterrupt:
                click.echo("", err=True)
                return
            if not line:
                if interactive:
                    click.echo("", err=True)
                return
            if isinstance(line, bytes):
                line = incoming.decode(line, "a chat line")
            text = incoming.clean(line, "a chat line").strip()
            if not text:
                continue
            if text.startswith("/"):
                if not self.command(text):
                    return
                continue
            self.ask(text)

    def command(self, text: str) -> bool:
        """Run a /command; False when the chat should end."""
        name = text.split()[0].lower()
        if name in ("/quit", "/exit"):
            return False
        if name == "/reset":
            count = len(self.history)
            self.history.clear()
            click.echo(f"history cleared ({count} turn{'s' if count != 1 else ''} forgotten)", err=True)
        elif name == "/history":
            for line in self.history_lines():
                click.echo(line, err=True)
        else:
            known = ", ".join(CHAT_COMMANDS)
            click.echo(f"unknown command {name}; use one of {known}", err=True)
        return True

    def history_lines(self) -> list[str]:
        """The turns so far, numbered, each question with its answer."""
        if not self.history:
            return ["(no turns yet)"]
        lines = []
        for number, turn in enumerate(self.history, start=1):
            answer = turn.answer if turn.answer is not None else "(no answer)"
            lines += [f"{number}. {shown(turn.question, one_line=True)}", f"   -> {shown(answer, one_line=True)}"]
        return lines

    def check_length(self, question: str) -> None:
        """Refuse a question too long for the context window (runner.check_question_length)."""
        check_question_length(getattr(self.session, "backend", None), question)

    def ask(self, question: str) -> Trajectory | None:
        """Answer one question with the history so far; None when it was abandoned with Ctrl-C or refused (one
        error line: too long, or an error of its own), and then the chat goes on without it."""
        callbacks = None if self.quiet else LiveView(question=question).callbacks()
        try:
            self.check_length(question)
            trajectory = self.session.ask(question, self.config, callbacks, history=tuple(self.history))
        except KeyboardInterrupt:
            click.echo("\ninterrupted: question abandoned", err=True)
            return None
        except OfflineAgentError as exc:  # this question's own problem: say so, keep the chat and its history
            click.echo(f"error: {exc} (question skipped)", err=True)
            return None
        self.history.append(Turn(question, trajectory.answer))
        attach_sources(trajectory, self.session.index)
        if self.as_json:
            click.echo(jsonio.dumps(trajectory.to_dict()))
        else:
            answer = ABSTAINED if trajectory.abstained else trajectory.answer
            click.echo(shown(answer, one_line=True) if answer is not None else "")
            if not self.quiet:  # stdout holds one line per answer: the sources go with the steps, on stderr
                for line in format_sources(trajectory):
                    click.echo(shown(line, one_line=True), err=True)
        if not self.quiet:
            click.echo(
                "\n" + stop_line(trajectory, getattr(getattr(self.session, "backend", None), "capabilities", None)),
                err=True,
            )
        if trajectory.stop_reason not in ("final", "abstained"):
            click.echo(no_answer_line(trajectory), err=True)
        # After the answer, so a trace that cannot be written never hides it; the chat goes on.
        if not write_trace_or_report(self.trace, trajectory):
            self.trace_failures += 1
        return trajectory


@click.command("chat", cls=OptionsCommand)
@run_options(
    max_steps_help="Most model turns per question; the last one may only answer (see --early-stopping).",
    max_seconds_help="Stop a question after this many seconds (stop reason timeout).",
)
@place({"as_json": OUTPUT, "trace": OUTPUT, "quiet": OUTPUT})
@click.option(
    "--json", "as_json", is_flag=True, help="Print each turn's whole trajectory as one JSON line instead of its answer."
)
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append each turn's trajectory as one JSON line to this file.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print the steps on stderr.")
def chat(run: RunChoice, as_json: bool, trace: Path | None, quiet: bool) -> None:
    """Answer questions read from stdin, one per line, with the model and corpus loaded once.

    Follow-up questions may refer to earlier turns: the agent sees the last few answered ones. Each question's
    steps are shown on stderr as in `ask`, and its answer goes to stdout as one line (an empty line when the
    agent stopped without one; with --json, the whole trajectory as one JSON line). On a terminal the prompt
    `> ` is shown on stderr.

    \b
    Commands:
      /history   list the turns so far (on stderr)
      /reset     forget them
      /quit      end the chat (so do end of input and Ctrl-C at the prompt)
    Ctrl-C while a question runs abandons that question only.

    \b
    Examples:
      offline-agent chat --corpus ~/notes
      printf 'Who founded X?\\nWhere was she born?\\n' | offline-agent chat -q

    Exit status: 0 when the chat ends, 1 error (model or corpus), 2 bad usage, 4 some turns could not be written
    to the --trace file (their answers were printed).
    """
    # a model server must answer within --max-seconds
    click.get_current_context().with_resource(setup_time_limit(run.settings.config.max_seconds))
    if trace is not None:
        check_writable_file(trace, "trace file")
    session = open_session(run, quiet=quiet)
    stdin = getattr(sys.stdin, "buffer", sys.stdin)  # bytes: a line that is not UTF-8 is decoded by incoming.py
    interactive = hasattr(stdin, "isatty") and stdin.isatty()
    if interactive and not quiet:
        click.echo("one question per line; " + ", ".join(f"{k} {v}" for k, v in CHAT_COMMANDS.items()), err=True)
    loop = ChatLoop(session, run.settings.config, as_json=as_json, trace=trace, quiet=quiet)
    loop.run(stdin, interactive=interactive)
    if loop.trace_failures:
        raise SystemExit(EXIT_TRACE_FAILED)


COMMANDS = [chat]

__all__ = ["COMMANDS", "ChatLoop", "chat"]
