"""Options that `ask` and `eval` share, defined once so their names, ranges, defaults and help agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def model_options(*, max_steps_help: str, max_seconds_help: str) -> Decorator:
    """--model, the step and time limits, sampling, and the llama.cpp settings."""
    options = [
        click.option(
            "--model",
            "-m",
            metavar="NAME_OR_PATH",
            envvar="OFFLINE_AGENT_MODEL",
            help="Registry name or .gguf path [env OFFLINE_AGENT_MODEL; default: the registry default].",
        ),
        click.option("--max-steps", type=click.IntRange(1, 50), default=8, show_default=True, help=max_steps_help),
        click.option("--max-seconds", type=click.FloatRange(min=0.1), default=None, help=max_seconds_help),
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

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            function = option(function)
        return function

    return apply
