"""Options that `ask`, `chat` and `eval` share, defined once so their names, ranges, defaults and help agree."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _model_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An empty --model is a mistake (an unset variable in a script), not a request for the default model."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; give a registry name or a .gguf path, or leave it out for the default")
    return value


def _finite_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """FloatRange lets nan (every comparison is false) and inf through; neither is a time limit."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


def _stack(options: list[Decorator]) -> Decorator:
    """One decorator applying `options` so that --help lists them in this order."""

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


def model_options(*, max_steps_help: str, max_seconds_help: str) -> Decorator:
    """--model, the step and time limits, sampling, and the llama.cpp settings."""
    options = [
        click.option(
            "--model",
            "-m",
            metavar="NAME_OR_PATH",
            envvar="OFFLINE_AGENT_MODEL",
            callback=_model_name,
            help="Registry name or .gguf path [env OFFLINE_AGENT_MODEL; default: the registry default].",
        ),
        click.option("--max-steps", type=click.IntRange(1, 50), default=8, show_default=True, help=max_steps_help),
        click.option(
            "--max-seconds",
            type=click.FloatRange(min=0.1),
            default=None,
            callback=_finite_seconds,
            help=max_seconds_help,
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(16, 4096),
            default=192,
            show_default=True,
            help="Most tokens per step (a cut-off step is retried once with twice as many).",
        ),
        click.option(
            "--temperature",
            "-t",
            type=click.FloatRange(0.0, 5.0),
            default=0.0,
            show_default=True,
            help="Sampling temperature; 0 is greedy.",
        ),
        click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (recorded with the run)."),
        click.option(
            "--gpu-layers",
            type=int,
            envvar="OFFLINE_AGENT_GPU_LAYERS",
            default=0,
            show_default=True,
            help="Layers to offload to the GPU (-1: all) [env OFFLINE_AGENT_GPU_LAYERS].",
        ),
        click.option(
            "--context-size",
            type=click.IntRange(512, 131072),
            default=None,
            help="Context window in tokens [default: the registry's n_ctx, else 4096].",
        ),
    ]
    return _stack(options)


def control_options() -> Decorator:
    """--early-stopping, --grounded and --budget-hint: what the last step may do, what an answer may say, and
    whether the model sees its budget."""
    from offline_agent.agents.react import EARLY_STOPPING

    return _stack(
        [
            click.option(
                "--early-stopping",
                type=click.Choice(EARLY_STOPPING),
                default="generate",
                show_default=True,
                help="generate: the last allowed step may only be Final; force: it is an ordinary step, and a run "
                "with no Final by then stops without an answer (stop reason max_steps).",
            ),
            click.option(
                "--grounded/--no-grounded",
                default=False,
                show_default=True,
                help="The Final answer may only be a span of the question or of what the searches returned (or "
                "yes/no): each step's grammar is rebuilt from what the run has read.",
            ),
            click.option(
                "--first-search/--no-first-search",
                default=False,
                show_default=True,
                help="Open every run with a search for the question itself (written by the agent, not the model).",
            ),
            click.option(
                "--min-searches",
                type=click.IntRange(0, 10),
                default=0,
                show_default=True,
                help="Final is allowed only after this many successful searches, and until then only search may be "
                "called (the last step may always answer).",
            ),
            click.option(
                "--samples",
                type=click.IntRange(1, 32),
                default=1,
                show_default=True,
                help="Self-consistency: run the question this many times (the first run as configured, the others "
                "sampled at temperature 0.7) and answer what most runs answered. Costs that many runs.",
            ),
            click.option(
                "--budget-hint/--no-budget-hint",
                default=False,
                show_default=True,
                help="Tell the model after each Observation how many steps it has left (off by default: with "
                "the default model it made react take more steps and repeat searches, for lower exact match).",
            ),
        ]
    )


def session_options() -> Decorator:
    """The corpus, the strategy, and the llama.cpp settings of a session that answers questions (ask, chat)."""
    from offline_agent.agents import AGENTS

    return _stack(
        [
            click.option(
                "--corpus",
                "-c",
                metavar="DIR_OR_INDEX",
                help="Folder or file of documents, an index folder, or an index name. Default: the sample corpus.",
            ),
            click.option(
                "--agent", type=click.Choice(sorted(AGENTS)), default="react", show_default=True, help="Agent strategy."
            ),
            click.option(
                "--threads",
                type=click.IntRange(1, 512),
                envvar="OFFLINE_AGENT_THREADS",
                default=None,
                help="CPU threads for llama.cpp [env OFFLINE_AGENT_THREADS; default: every core]. Use fewer when "
                "other programs keep cores busy: llama.cpp's threads wait on each other.",
            ),
            click.option(
                "--no-grammar", is_flag=True, help="Generate without the grammar (the parser still checks every step)."
            ),
            click.option(
                "--grammar-engine",
                type=click.Choice(["llguidance", "llama.cpp-check", "llama.cpp"]),
                default="llguidance",
                show_default=True,
                help="llguidance checks the sampled token and jumps forward over forced ones (fastest); "
                "llama.cpp-check checks the sampled token with llama.cpp's grammar code (no jump-forward); llama.cpp "
                "is llama-cpp-python's grammar= sampler (checks the whole vocabulary at every token).",
            ),
            click.option("--no-jump-forward", is_flag=True, help="Sample every token, even those the grammar forces."),
            click.option(
                "--verbose",
                is_flag=True,
                help="Show llama.cpp's own log on stderr (e.g. how many layers went to the GPU).",
            ),
        ]
    )


def evidence_options() -> Decorator:
    """--search-k, --snippets and --title-boost: what a search shows the model."""
    from offline_agent.tools.corpus import SNIPPETS

    return _stack(
        [
            click.option(
                "--search-k", type=click.IntRange(1, 20), default=3, show_default=True, help="Passages per search."
            ),
            click.option(
                "--snippets",
                "snippet",
                type=click.Choice(SNIPPETS),
                default="head",
                show_default=True,
                help="What a search shows of each passage: its head (first 600 characters), or its first sentence "
                "and the two that best match the query.",
            ),
            click.option(
                "--title-boost/--no-title-boost",
                default=False,
                show_default=True,
                help="Put the document whose title the query names first, whatever its BM25 rank.",
            ),
        ]
    )


def action_graph_option() -> Decorator:
    """--action-graph: knowagent's action graph file."""
    return click.option(
        "--action-graph",
        type=click.Path(dir_okay=False),
        default=None,
        metavar="FILE",
        help="knowagent only: a TOML file of the actions and which may follow which [default: the shipped graph, "
        "Start -> Search | Retrieve, then Search, Retrieve, Lookup, Finish].",
    )
