"""Options that `ask`, `chat`, `mcp` and `eval` share, defined once so that their names, ranges, defaults and help
agree, and collected into one object (`RunChoice`) that the command receives instead of thirty parameters.

What the user chooses is a flag: the model, the corpus, the strategy (`--agent`) and its settings profile
(`--profile`), the limits and sampling, the grammar switch, the backend and its options. What a strategy chooses
is one of its options, given as `-o KEY=VALUE` (repeatable) and checked by that strategy; `--help-options`
lists them. The strategy flags these commands had before are rewritten to that form (legacy.py).

The backend's options (`backend_options`) default to None, so that `backend_choice` can tell an option the user
gave from one left alone: a backend refuses an option given on the command line that it does not take, and drops
one that only came from an environment variable (OFFLINE_AGENT_GPU_LAYERS stays harmless with --backend http).

`--help` lists these options in sections (sections.py): RUN_SECTIONS below says where each one goes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from offline_agent.backends.registry import (
    BACKEND_ALIASES,
    BACKENDS,
    DEFAULT_BACKEND,
    MAX_SEED,
    BackendOptions,
    check_options,
)
from offline_agent.cli.sections import CORPUS, HTTP, LIMITS, LLAMACPP, LOCAL, MODEL, STRATEGY, TRANSFORMERS, place
from offline_agent.errors import ConfigError

if TYPE_CHECKING:
    from offline_agent.agents import AgentSettings

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _model_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An empty --model is a mistake (an unset variable in a script), not a request for the default model."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; name a model (or a path), or leave the option out for the default")
    return value


def _finite_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """FloatRange lets nan (every comparison is false) and inf through; neither is a time limit."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """FloatRange lets nan through (every comparison is false): a usage error, like any other bad value."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number")
    return value


def _stack(options: list[Decorator]) -> Decorator:
    """One decorator applying `options` so that --help lists them in this order."""

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


_HELP_OPTIONS = "offline_agent.help_options"


def _help_options(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """--help-options, --agent and --profile are eager: once all three are read (in any order on the command line,
    before a missing QUESTION is noticed), --help-options prints the chosen strategy's options and exits."""
    if param.name == "help_options" and value:
        ctx.meta[_HELP_OPTIONS] = True
    seen = {**ctx.params, param.name: value}
    if ctx.meta.get(_HELP_OPTIONS) and "agent" in seen and "profile" in seen and not ctx.resilient_parsing:
        from offline_agent.agents import profile_named
        from offline_agent.cli.strategies import strategy_lines

        profile = profile_named(seen["profile"])
        click.echo("\n".join(strategy_lines(seen["agent"] or profile.agent, profile.name)))
        ctx.exit(0)
    return value


def _strategy_options() -> list[Decorator]:
    """--agent, --profile, -o and --help-options."""
    from offline_agent.agents import AGENTS, DEFAULT_PROFILE, PROFILES

    profiles = "; ".join(f"{name}: {profile.help.rstrip('.')}" for name, profile in sorted(PROFILES.items()))
    return [
        click.option(
            "--agent",
            type=click.Choice(sorted(AGENTS)),
            default=None,
            is_eager=True,
            callback=_help_options,
            help="Strategy [default: the profile's, verify for answer]; `offline-agent strategies` lists them.",
        ),
        click.option(
            "--profile",
            type=click.Choice(sorted(PROFILES)),
            default=DEFAULT_PROFILE,
            show_default=True,
            is_eager=True,
            callback=_help_options,
            help=f"Named settings of the strategy's options. {profiles}",
        ),
        click.option(
            "-o",
            "--option",
            "option_values",
            multiple=True,
            metavar="KEY=VALUE",
            help="Set an option of the strategy (repeatable), e.g. -o read_hop=false; see --help-options.",
        ),
        click.option(
            "--help-options",
            is_flag=True,
            is_eager=True,
            expose_value=False,
            callback=_help_options,
            help="Show the chosen strategy's options (key, type, default, help) and exit.",
        ),
    ]


def _run_config_options(max_steps_help: str, max_seconds_help: str) -> list[Decorator]:
    """The run config every strategy obeys: limits, sampling, the grammar switch, the last step, the budget hint,
    self-consistency and the scope check."""
    from offline_agent.agents.run import EARLY_STOPPING

    return [
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
            callback=_finite,
            help="Sampling temperature; 0 is greedy.",
        ),
        click.option(
            "--seed",
            type=click.IntRange(0, MAX_SEED),  # refused here, not after the model has loaded
            default=0,
            show_default=True,
            help="Sampling seed (recorded with the run).",
        ),
        click.option(
            "--grammar",
            type=click.Choice(["on", "off"]),
            default="on",
            show_default=True,
            help="off: generate without the grammar (the parser still checks every step and counts format errors).",
        ),
        click.option(
            "--early-stopping",
            type=click.Choice(EARLY_STOPPING),
            default="generate",
            show_default=True,
            help="generate: the last allowed step may only be Final; force: it is an ordinary step, and a run "
            "with no Final by then stops without an answer (stop reason max_steps).",
        ),
        click.option(
            "--budget-hint/--no-budget-hint",
            default=False,
            show_default=True,
            help="Tell the model after each Observation how many steps it has left.",
        ),
        click.option(
            "--samples",
            type=click.IntRange(1, 32),
            default=1,
            show_default=True,
            help="Self-consistency: run the question this many times (the others sampled at temperature 0.7) "
            "and answer what most runs answered.",
        ),
        click.option(
            "--scope",
            metavar="TEXT_OR_FILE",
            default=None,
            help="What the documents are about (text, or a file holding it): a question outside it gets a short "
            "refusal (stop reason out_of_scope) before any search. Default: the scope stored with the index "
            "(`index --scope`) or the sample corpus's; --scope '' turns the check off.",
        ),
    ]


# The --help section of each run option, by parameter name (sections.py); a test keeps every one placed.
RUN_SECTIONS = {
    "corpus": CORPUS,
    **dict.fromkeys(("agent", "profile", "option_values", "help_options"), STRATEGY),
    **dict.fromkeys(
        (
            *("max_steps", "max_seconds", "max_tokens", "temperature", "seed"),
            *("grammar", "early_stopping", "budget_hint", "samples", "scope"),
        ),
        LIMITS,
    ),
    **dict.fromkeys(("model", "context_size", "backend"), MODEL),
    **dict.fromkeys(("gpu_layers", "grammar_engine", "draft_tokens"), LLAMACPP),
    "device": TRANSFORMERS,
    **dict.fromkeys(("threads", "no_jump_forward", "verbose"), LOCAL),
    **dict.fromkeys(("server_url", "server_kind", "server_timeout"), HTTP),
}


def run_options(*, max_steps_help: str, max_seconds_help: str, corpus: bool = True) -> Decorator:
    """The options of a command that answers questions, handed to it as one RunChoice in the parameter `run`:
    --model, the corpus (unless `corpus` is False: `mcp` takes --index), the strategy and its options, the run
    config, and the backend with its own options."""
    corpus_option = click.option(
        "--corpus",
        "-c",
        metavar="DIR_OR_INDEX",
        help="Folder or file of documents, an index folder, or an index name. Default: the sample corpus.",
    )
    options = [
        click.option(
            "--model",
            "-m",
            metavar="NAME_OR_PATH",
            envvar="OFFLINE_AGENT_MODEL",
            callback=_model_name,
            help="Registry name, .gguf path, or (transformers) a model folder; with --backend http, the name of the "
            "server's model [env OFFLINE_AGENT_MODEL; default: the registry default, or the server's one model].",
        ),
        *([corpus_option] if corpus else []),
        *_strategy_options(),
        *_run_config_options(max_steps_help, max_seconds_help),
        click.option(
            "--context-size",
            type=click.IntRange(512, 131072),
            default=None,
            help="Context window in tokens [default: the registry's n_ctx, else 4096].",
        ),
        backend_options(),
    ]

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def command(*args: Any, **params: Any) -> Any:
            run = run_choice(click.get_current_context(), params, corpus=corpus)
            return function(*args, run=run, **params)

        return place(RUN_SECTIONS)(_stack(options)(command))

    return apply


@dataclass(frozen=True)
class RunChoice:
    """What a command that answers questions was asked to run: the settings (strategy, profile, run config and
    options), the backend with its options, the model as named, and the corpus (ask and chat)."""

    settings: AgentSettings
    backend: BackendChoice
    model: str | None = None
    context_size: int | None = None
    corpus: str | None = None


def run_choice(ctx: click.Context, params: dict[str, Any], *, corpus: bool) -> RunChoice:
    """Read the shared options out of a command's `params` (they are removed from it). A strategy option that
    does not exist or does not parse, or a bad value of one, is a usage error (exit 2) that says why."""
    from offline_agent.agents import agent_settings
    from offline_agent.agents.options import parse_assignments
    from offline_agent.agents.scope import read_scope

    backend = backend_choice(ctx, params)
    model, context_size = params.pop("model"), params.pop("context_size")
    where = params.pop("corpus", None)
    scope = params.pop("scope")
    if scope is not None or not corpus:
        scope_text = read_scope(scope)
    else:
        from offline_agent.runner import corpus_scope

        scope_text = corpus_scope(where)
    try:
        settings = agent_settings(
            params.pop("agent"),
            params.pop("profile"),
            parse_assignments(params.pop("option_values")),
            max_steps=params.pop("max_steps"),
            max_seconds=params.pop("max_seconds"),
            max_tokens=params.pop("max_tokens"),
            temperature=params.pop("temperature"),
            seed=params.pop("seed"),
            grammar=params.pop("grammar") == "on",
            early_stopping=params.pop("early_stopping"),
            budget_hint=params.pop("budget_hint"),
            samples=params.pop("samples"),
            scope=scope_text,
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc), ctx) from None
    return RunChoice(settings, backend, model=model, context_size=context_size, corpus=where)


def _backend_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    name = value or DEFAULT_BACKEND
    if name not in BACKENDS and name not in BACKEND_ALIASES:
        raise click.BadParameter(f"unknown backend {name!r}; choose from {', '.join(sorted(BACKENDS))}")
    return BACKEND_ALIASES.get(name, name)


def backend_options() -> Decorator:
    """--backend and every backend's own settings; --help lists each under the backends that take it
    (RUN_SECTIONS)."""
    from offline_agent.backends.http import SERVER_KINDS

    return _stack(
        [
            click.option(
                "--backend",
                metavar="|".join(BACKENDS),
                envvar="OFFLINE_AGENT_BACKEND",
                default=DEFAULT_BACKEND,
                show_default=True,
                callback=_backend_name,
                help="What runs the model: llamacpp (a GGUF in llama.cpp), transformers (a model folder or GGUF in "
                "PyTorch) or http (a model server); each one's own options follow [env OFFLINE_AGENT_BACKEND].",
            ),
            click.option(
                "--gpu-layers",
                type=int,
                envvar="OFFLINE_AGENT_GPU_LAYERS",
                default=None,
                help="Layers to offload to the GPU (-1: all; needs llama-cpp-python built for the GPU, "
                "see docs/gpu.md) [env OFFLINE_AGENT_GPU_LAYERS; default 0].",
            ),
            click.option(
                "--threads",
                type=click.IntRange(1, 512),
                envvar="OFFLINE_AGENT_THREADS",
                default=None,
                help="CPU threads [env OFFLINE_AGENT_THREADS; default: every core]. Use "
                "fewer when other programs keep cores busy: llama.cpp's threads wait on each other.",
            ),
            click.option(
                "--grammar-engine",
                type=click.Choice(["llguidance", "llama.cpp-check", "llama.cpp"]),
                default=None,
                help="llguidance (the default) checks the sampled token and jumps forward over forced ones "
                "(fastest); llama.cpp-check checks the sampled token with llama.cpp's grammar code (no "
                "jump-forward); llama.cpp is llama-cpp-python's grammar= sampler (checks the whole vocabulary at "
                "every token).",
            ),
            click.option(
                "--no-jump-forward",
                is_flag=True,
                default=None,
                help="Sample every token, even those the grammar forces.",
            ),
            click.option(
                "--draft-tokens",
                type=click.IntRange(0, 32),
                default=None,
                help="Speculative decoding: guess up to N tokens ahead by copying from the prompt (what "
                "follows the last few tokens where they occurred before) and check them in one evaluation. Exact in "
                "logic, but llama.cpp's logits shift with how tokens are batched, so near-ties can flip (2 of 11 "
                "agent runs of the default model answered otherwise) and on 2 CPU cores it is slower. 0 turns it "
                "off [default: 0].",
            ),
            click.option(
                "--device",
                type=click.Choice(["cpu", "cuda"]),
                default=None,
                help="Where the model runs [default: cpu].",
            ),
            click.option(
                "--server-url",
                metavar="URL",
                envvar="OFFLINE_AGENT_SERVER_URL",
                default=None,
                help="The server's base URL, e.g. http://127.0.0.1:8080 [env OFFLINE_AGENT_SERVER_URL]; "
                "an API key is read from OFFLINE_AGENT_API_KEY.",
            ),
            click.option(
                "--server-kind",
                type=click.Choice(SERVER_KINDS),
                default=None,
                help="The server's dialect [default: detected from the server].",
            ),
            click.option(
                "--server-timeout",
                type=click.FloatRange(min=1.0),
                default=None,
                callback=_finite_seconds,
                metavar="SECONDS",
                help="Seconds to wait for the server's answer to one request [default: 120].",
            ),
            click.option(
                "--verbose",
                is_flag=True,
                default=None,
                help="Show the engine's own log on stderr (e.g. how many layers went to the GPU).",
            ),
        ]
    )


# The click parameters behind each backend option (model, context size and seed come from model_options).
_PARAMETERS = {
    "model": "model",
    "context_size": "context_size",
    "seed": "seed",
    "gpu_layers": "gpu_layers",
    "threads": "threads",
    "grammar_engine": "grammar_engine",
    "jump_forward": "no_jump_forward",
    "draft_tokens": "draft_tokens",
    "parallel": "parallel",  # eval only
    "verbose": "verbose",
    "device": "device",
    "server_url": "server_url",
    "server_kind": "server_kind",
    "timeout": "server_timeout",
}


@dataclass(frozen=True)
class BackendChoice:
    """The backend a command was asked for, with the options given for it (already checked against it)."""

    name: str
    options: BackendOptions

    def build(self) -> Any:
        from offline_agent.backends.registry import build_backend

        return build_backend(self.name, self.options)


def backend_choice(ctx: click.Context, params: dict[str, Any]) -> BackendChoice:
    """Read --backend and the backend options out of a command's `params` (they are removed from it), refusing
    an option given on the command line that the backend does not take (one line, naming the backend)."""
    import os

    name = params.pop("backend", None) or DEFAULT_BACKEND
    values: dict[str, Any] = {}
    from_env: set[str] = set()
    for option, parameter in _PARAMETERS.items():
        shared = parameter in ("model", "context_size", "seed")  # the command uses these too
        value = params.get(parameter) if shared else params.pop(parameter, None)
        if value is None:
            continue
        source = ctx.get_parameter_source(parameter)
        if source in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) and option != "seed":
            continue
        if option == "jump_forward":
            value = not value
        values[option] = value
        if source == ParameterSource.ENVIRONMENT:
            from_env.add(option)
    api_key = os.environ.get("OFFLINE_AGENT_API_KEY")
    if api_key:
        values["api_key"] = api_key
        from_env.add("api_key")
    options = check_options(name, BackendOptions(**values), ignore=frozenset(from_env | {"seed"}))
    return BackendChoice(name, options)
