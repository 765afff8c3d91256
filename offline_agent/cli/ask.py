"""`offline-agent ask`: one question, answered by the ReAct agent over a local corpus, with a live view."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from offline_agent import incoming, jsonio
from offline_agent.agents import AgentCallbacks
from offline_agent.backends.registry import setup_time_limit
from offline_agent.cli.legacy import OptionsCommand
from offline_agent.cli.options import RunChoice, run_options
from offline_agent.cli.sections import OUTPUT, place
from offline_agent.errors import ConfigError, OfflineAgentError
from offline_agent.hops import HopTracker, hops
from offline_agent.outputs import append_line, check_writable_file, describe_write_error
from offline_agent.sources import ABSTAINED, attach_sources, format_sources
from offline_agent.steps import Action, StepRecord, Trajectory
from offline_agent.terminal import shown, shown_name

if TYPE_CHECKING:
    from offline_agent.runner import Session
EXIT_NO_ANSWER = 3
# The run finished and its answer (if any) was printed, but the trace file could not be written.
EXIT_TRACE_FAILED = 4
EXIT_OUT_OF_SCOPE = 5  # the question is outside the corpus's scope: the refusal is printed as the answer
EXIT_ABSTAINED = 6  # the documents do not say: that sentence and the nearest passages found are printed


class LiveView:
    """Prints each step on stderr as it happens: the model's text as it streams, the tool call while it runs, then,
    as soon as the tool returns, its hop (the name it looked for and the step that read it, when it searched for a
    name the run read and the `question` does not write; hops.py) and the Observation."""

    def __init__(self, stream: Any = None, question: str = "") -> None:
        self.stream = stream or sys.stderr
        self.color = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._line_open = False  # the last text written did not end its line
        self._observation_shown = False  # this step's Observation was printed when its tool ended
        self._step = 0  # the step being written (0-based)
        self._hops = HopTracker(question)

    def _write(self, text: str, **style: Any) -> None:
        text = shown(text)  # document text (and what the model copies of it) never drives the terminal
        if not text:
            return
        click.echo(click.style(text, **style) if self.color and style else text, file=self.stream, nl=False)
        self.stream.flush()
        self._line_open = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._line_open:
            self._write("\n")

    def _observation(self, text: str, is_error: bool) -> None:
        self._write(f"Observation: {text}\n", fg="red" if is_error else "yellow")

    def step_start(self, index: int, final_only: bool) -> None:
        self._observation_shown = False
        self._step = index
        self._end_line()
        note = " (last step: Final only)" if final_only else ""
        self._write(f"\n── step {index + 1}{note}\n", dim=True)

    def token(self, text: str) -> None:
        self._write(text, fg="cyan")

    def tool_start(self, name: str, argument: Any) -> None:
        self._end_line()
        self._write(f"… running {Action(name, argument).render()}\n", dim=True)

    def tool_end(self, name: str, argument: Any, observation: str, is_error: bool) -> None:
        self._end_line()
        hop = self._hops.tool_ran(self._step, name, argument, observation, is_error)
        if hop is not None:  # between the call and what it returned, as the stop line counts it
            self._write(f"hop {len(self._hops.hops)}: {hop.bridge} (read in step {hop.read_at + 1})\n", fg="magenta")
        self._observation(observation, is_error)
        self._observation_shown = True

    def step(self, record: StepRecord) -> None:
        self._end_line()
        if record.parse_error:
            self._write(f"[parse error: {record.parse_error['label']}: {record.parse_error['message']}]\n", fg="red")
        if record.observation is not None and not self._observation_shown:  # a call refused without running
            self._observation(record.observation, record.tool_error)
        self._observation_shown = False

    def callbacks(self) -> AgentCallbacks:
        return AgentCallbacks(
            on_step_start=self.step_start,
            on_token=self.token,
            on_tool_start=self.tool_start,
            on_tool_end=self.tool_end,
            on_step=self.step,
        )


def open_session(run: RunChoice, *, quiet: bool) -> Session:
    """Open the corpus and build the backend once, saying what was loaded on stderr unless `quiet`."""
    from offline_agent.runner import Session, open_index

    index, corpus_name = open_index(run.corpus)
    if not quiet:
        click.echo(f"corpus: {corpus_name} ({len(index)} passages)", err=True)
    loaded = run.backend.build()
    if not quiet:
        click.echo(f"model: {model_line(loaded)}", err=True)
    return Session.from_settings(run.settings, backend=loaded, index=index, corpus=corpus_name)


def model_line(backend: Any) -> str:
    """The loaded model in a few words: its name, where it is, and the backend."""
    described = backend.describe()
    where = described.get("path") or described.get("url") or "?"
    return f"{described.get('name')} ({where}; backend {backend.name})"


def append_trace(path: Path, trajectory: Trajectory) -> None:
    """Append one whole JSON line and fsync (outputs.append_line: never half a record, never after a torn one)."""
    line = (trajectory.to_json() + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        append_line(path, line)
    except OSError as exc:
        raise ConfigError(f"cannot write the trace file {path}: {describe_write_error(path, exc)}") from None


def write_trace_or_report(path: Path | None, trajectory: Trajectory) -> bool:
    """Append to the trace file if there is one; on failure say why on stderr (one line) and return False."""
    if path is None:
        return True
    try:
        append_trace(path, trajectory)
    except OfflineAgentError as exc:
        click.echo(f"error: {exc} (the trajectory was not saved)", err=True)
        return False
    return True


@click.command("ask", cls=OptionsCommand)
@click.argument("question")
@run_options(
    max_steps_help="Most model turns; the last one may only answer (see --early-stopping).",
    max_seconds_help="Stop after this many seconds from the start, loading the model or reaching its server included "
    "(stop reason timeout).",
)
@place({"as_json": OUTPUT, "trace": OUTPUT, "quiet": OUTPUT})
@click.option("--json", "as_json", is_flag=True, help="Print the whole trajectory as one JSON object on stdout.")
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the trajectory as one JSON line to this file.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print the steps on stderr.")
def ask(question: str, run: RunChoice, as_json: bool, trace: Path | None, quiet: bool) -> None:
    """Answer QUESTION with a grammar-constrained agent that searches a local corpus.

    Each step (Thought, then Action or Final) is printed on stderr as it is written, with the tool's
    Observation; the answer goes to stdout, and under it the passages it rests on (file, heading path, line or
    page, and the sentence), or that it is written in none of those the searches returned. The strategy's own
    options are set with -o KEY=VALUE (see --help-options, or `offline-agent strategies`). Exit status: 0
    answered, 1 error, 2 bad usage, 3 the agent stopped without an answer (max steps, timeout, or a step the
    parser rejected), 4 the answer was printed but the --trace file could not be written, 5 the question is
    outside the corpus's scope (--scope; the refusal is printed as the answer), 6 the documents do not say
    (with -o abstain=true or -o support_check=true the agent abstained: that sentence and the nearest passages
    it found are printed).
    """
    started = time.monotonic()
    question = incoming.clean(question, "the question")
    if not question.strip():
        raise click.BadParameter("the question is empty", param_hint="QUESTION")
    # --max-seconds bounds the model's set-up too
    click.get_current_context().with_resource(setup_time_limit(run.settings.config.max_seconds))
    if trace is not None:
        check_writable_file(trace, "trace file")  # before the run: its answer must not be lost to a bad path
    session = open_session(run, quiet=quiet)
    config = run.settings.config
    if config.max_seconds is not None:  # the run has what the set-up left of the time
        config = dataclasses.replace(config, max_seconds=max(config.max_seconds - (time.monotonic() - started), 0.01))
    callbacks = None if quiet else LiveView(question=question).callbacks()
    trajectory = attach_sources(session.ask(question, config, callbacks), session.index)
    status = 0
    try:  # the answer first: nothing may hide it
        report_trajectory(trajectory, as_json=as_json, quiet=quiet, capabilities=session.backend.capabilities)
    except SystemExit as stop:
        status = stop.code
    finally:
        traced = write_trace_or_report(trace, trajectory)
    if not traced:
        status = EXIT_TRACE_FAILED
    if status:
        raise SystemExit(status)


def report_trajectory(trajectory: Trajectory, *, as_json: bool, quiet: bool, capabilities: Any = None) -> None:
    """Print the answer (or the JSON trajectory) on stdout; exit 3 when there is no answer, 6 when the run
    abstained (the documents do not say)."""
    if as_json:
        click.echo(jsonio.dumps(trajectory.to_dict()))
    elif trajectory.answer is not None or trajectory.abstained:
        click.echo(ABSTAINED if trajectory.abstained else shown(trajectory.answer or "", one_line=True))
        sources = format_sources(trajectory)
        if sources:
            click.echo("\n" + "\n".join(shown_name(line) for line in sources))  # paths: never cut
    if not quiet:
        click.echo("\n" + stop_line(trajectory, capabilities), err=True)
    if trajectory.stop_reason == "out_of_scope":
        raise SystemExit(EXIT_OUT_OF_SCOPE)
    if trajectory.abstained:
        raise SystemExit(EXIT_ABSTAINED)
    if trajectory.stop_reason != "final":
        click.echo(no_answer_line(trajectory), err=True)
        raise SystemExit(EXIT_NO_ANSWER)


def stop_line(trajectory: Trajectory, capabilities: Any = None) -> str:
    """Why and after how much work the run stopped, in one line: steps, hops (hops.py), seconds, tokens (cached
    tokens n/a for a backend that does not report them)."""
    usage = trajectory.usage
    cached = usage.cached_tokens if capabilities is None or capabilities.reuses_prefix_cache else "n/a"
    taken = len(hops(trajectory.question, trajectory.steps))
    return (
        f"stop: {trajectory.stop_reason} after {len(trajectory.steps)} steps, {taken} hop{'' if taken == 1 else 's'}, "
        f"{trajectory.seconds:.1f} s; "
        f"tokens: {usage.prompt_tokens} prompt ({cached} cached), {usage.generated_tokens} generated"
    )


def no_answer_line(trajectory: Trajectory) -> str:
    """What a run that stopped without an answer tells the user."""
    reason = f": {trajectory.error}" if trajectory.error else ""
    return shown(f"no answer (stop reason {trajectory.stop_reason}{reason})", one_line=True)


COMMANDS = [ask]

__all__ = [
    "COMMANDS",
    "EXIT_ABSTAINED",
    "EXIT_TRACE_FAILED",
    "LiveView",
    "OfflineAgentError",
    "append_trace",
    "ask",
    "model_line",
    "open_session",
    "report_trajectory",
    "write_trace_or_report",
]
