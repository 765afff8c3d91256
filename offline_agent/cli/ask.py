"""`offline-agent ask`: one question, answered by the ReAct agent over a local corpus, with a live view."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from offline_agent.agents import AGENTS, AgentCallbacks, AgentConfig
from offline_agent.cli.options import model_options
from offline_agent.errors import ConfigError, OfflineAgentError
from offline_agent.steps import StepRecord, Trajectory

EXIT_NO_ANSWER = 3


class LiveView:
    """Prints each step on stderr as it happens: the model's text as it streams, then the Observation."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.color = hasattr(self.stream, "isatty") and self.stream.isatty()

    def _write(self, text: str, **style: Any) -> None:
        click.echo(click.style(text, **style) if self.color and style else text, file=self.stream, nl=False)
        self.stream.flush()

    def step_start(self, index: int, final_only: bool) -> None:
        note = " (last step: Final only)" if final_only else ""
        self._write(f"\n── step {index + 1}{note}\n", dim=True)

    def token(self, text: str) -> None:
        self._write(text, fg="cyan")

    def step(self, record: StepRecord) -> None:
        if not record.raw.endswith("\n"):
            self._write("\n")
        if record.parse_error:
            self._write(f"[parse error: {record.parse_error['label']}: {record.parse_error['message']}]\n", fg="red")
        if record.observation is not None:
            self._write(f"Observation: {record.observation}\n", fg="yellow" if not record.tool_error else "red")

    def callbacks(self) -> AgentCallbacks:
        return AgentCallbacks(on_step_start=self.step_start, on_token=self.token, on_step=self.step)


def append_trace(path: Path, trajectory: Trajectory) -> None:
    """Append one whole JSON line and fsync it, so a trace file is never left with half a record."""
    line = trajectory.to_json() + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise ConfigError(f"cannot write the trace file {path}: {exc.strerror or exc}") from None


@click.command("ask")
@model_options(
    max_steps_help="Most model turns; the last one may only answer.",
    max_seconds_help="Stop after this many seconds (stop reason timeout).",
)
@click.argument("question")
@click.option(
    "--corpus",
    "-c",
    metavar="DIR_OR_INDEX",
    help="Folder or file of documents, an index folder, or an index name. Default: the sample corpus.",
)
@click.option("--agent", type=click.Choice(sorted(AGENTS)), default="react", show_default=True, help="Agent strategy.")
@click.option(
    "--threads",
    type=click.IntRange(1, 512),
    envvar="OFFLINE_AGENT_THREADS",
    default=None,
    help="CPU threads for llama.cpp [env OFFLINE_AGENT_THREADS; default: every core]. Use fewer when other "
    "programs keep cores busy: llama.cpp's threads wait on each other.",
)
@click.option("--no-grammar", is_flag=True, help="Generate without the grammar (the parser still checks every step).")
@click.option(
    "--grammar-engine",
    type=click.Choice(["llguidance", "llama.cpp-check", "llama.cpp"]),
    default="llguidance",
    show_default=True,
    help="llguidance checks the sampled token and jumps forward over forced ones (fastest); llama.cpp-check "
    "checks the sampled token with llama.cpp's grammar code (no jump-forward); llama.cpp is llama-cpp-python's "
    "grammar= sampler (checks the whole vocabulary at every token).",
)
@click.option("--no-jump-forward", is_flag=True, help="Sample every token, even those the grammar forces.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole trajectory as one JSON object on stdout.")
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the trajectory as one JSON line to this file.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not print the steps on stderr.")
@click.option(
    "--verbose",
    is_flag=True,
    help="Show llama.cpp's own log on stderr (e.g. how many layers went to the GPU).",
)
def ask(
    question: str,
    corpus: str | None,
    model: str | None,
    agent: str,
    max_steps: int,
    max_seconds: float | None,
    temperature: float,
    seed: int,
    max_tokens: int,
    gpu_layers: int,
    threads: int | None,
    context_size: int | None,
    no_grammar: bool,
    grammar_engine: str,
    no_jump_forward: bool,
    as_json: bool,
    trace: Path | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """Answer QUESTION with a grammar-constrained agent that searches a local corpus.

    Each step (Thought, then Action or Final) is printed on stderr as it is written, with the tool's
    Observation; the answer goes to stdout. Exit status: 0 answered, 1 error, 2 bad usage, 3 the agent
    stopped without an answer (max steps, timeout, or a step the parser rejected).
    """
    from offline_agent.runner import Session, load_llama_backend, open_index

    if not question.strip():
        raise ConfigError("the question is empty")
    config = AgentConfig(
        max_steps=max_steps,
        max_seconds=max_seconds,
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        grammar=not no_grammar,
    )
    index, corpus_name = open_index(corpus)
    if not quiet:
        click.echo(f"corpus: {corpus_name} ({len(index)} passages)", err=True)
    backend = load_llama_backend(
        model,
        gpu_layers=gpu_layers,
        context_size=context_size,
        seed=seed,
        grammar_engine=grammar_engine,
        jump_forward=not no_jump_forward,
        threads=threads,
        verbose=verbose,
    )
    if not quiet:
        described = backend.describe()
        click.echo(f"model: {described['name']} ({described['path']})", err=True)
    session = Session(backend=backend, index=index, corpus=corpus_name, agent=agent)
    callbacks = None if quiet else LiveView().callbacks()
    trajectory = session.ask(question, config, callbacks)
    if trace is not None:
        append_trace(trace, trajectory)
    report_trajectory(trajectory, as_json=as_json, quiet=quiet)


def report_trajectory(trajectory: Trajectory, *, as_json: bool, quiet: bool) -> None:
    """Print the answer (or the JSON trajectory) on stdout and exit 3 when there is no answer."""
    if as_json:
        click.echo(json.dumps(trajectory.to_dict(), ensure_ascii=False))
    elif trajectory.answer is not None:
        click.echo(trajectory.answer)
    if not quiet:
        usage = trajectory.usage
        click.echo(
            f"\nstop: {trajectory.stop_reason} after {len(trajectory.steps)} steps, {trajectory.seconds:.1f} s; "
            f"tokens: {usage.prompt_tokens} prompt ({usage.cached_tokens} cached), {usage.generated_tokens} generated",
            err=True,
        )
    if trajectory.stop_reason != "final":
        reason = f": {trajectory.error}" if trajectory.error else ""
        click.echo(f"no answer (stop reason {trajectory.stop_reason}{reason})", err=True)
        raise SystemExit(EXIT_NO_ANSWER)


COMMANDS = [ask]

__all__ = ["COMMANDS", "LiveView", "OfflineAgentError", "append_trace", "ask", "report_trajectory"]
