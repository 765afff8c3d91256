"""Options that `ask`, `chat` and `eval` share, defined once so their names, ranges, defaults and help agree.

The backend's options (`backend_options`) default to None, so that `backend_choice` can tell an option the user
gave from one left alone: a backend refuses an option given on the command line that it does not take, and drops
one that only came from an environment variable (OFFLINE_AGENT_GPU_LAYERS stays harmless with --backend http).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from offline_agent.backends.registry import (
    BACKEND_ALIASES,
    BACKENDS,
    DEFAULT_BACKEND,
    BackendOptions,
    check_options,
)

if TYPE_CHECKING:
    from offline_agent.agents import AgentConfig

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


def agent_config(params: Mapping[str, Any], **overrides: Any) -> AgentConfig:
    """The AgentConfig of a command's options: every option named after a field of AgentConfig, `--no-grammar`
    as grammar, then `overrides` (values the command resolved itself, such as the scope)."""
    from offline_agent.agents import AgentConfig

    names = {field.name for field in fields(AgentConfig)}
    values = {name: value for name, value in params.items() if name in names}
    if "no_grammar" in params:
        values["grammar"] = not params["no_grammar"]
    values.update(overrides)
    return AgentConfig(**values)


def _stack(options: list[Decorator]) -> Decorator:
    """One decorator applying `options` so that --help lists them in this order."""

    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


def model_options(*, max_steps_help: str, max_seconds_help: str) -> Decorator:
    """--model, the step and time limits, sampling and the context size (each backend's own: backend_options)."""
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
        click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (recorded with the run)."),
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
    from offline_agent.agents import ANSWER_DEFAULTS
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
                default=ANSWER_DEFAULTS["grounded"],
                show_default=True,
                help="The Final answer may only be a span of the question or of what the searches returned (or "
                "yes/no), within one sentence and without a lower-case is/was/are/were: each step's grammar is "
                "rebuilt from what the run has read.",
            ),
            click.option(
                "--answer-form/--no-answer-form",
                default=ANSWER_DEFAULTS["answer_form"],
                show_default=True,
                help="With --grounded, the Final takes the form the question asks for: yes or no for a yes/no "
                "question, one of the options of an 'A or B' question, else a span of what the searches returned "
                "(not of the question).",
            ),
            click.option(
                "--exclude-refused/--no-exclude-refused",
                default=ANSWER_DEFAULTS["exclude_refused"],
                show_default=True,
                help="With --grounded and --agent verify: a Final refused as wrong (it repeats the question, names "
                "nothing ('The film'), is not the kind of thing asked for (or its document never uses a word the "
                "question puts before that kind) or the part of a name asked for, dates "
                "another event than the one asked about, is the entity the question describes on the way, loses a "
                "comparison, disagrees with the two documents read one at a time, is not in both documents of a "
                "question about what two things share) cannot be written again, in any case, nor a span that "
                "begins with it or "
                "that it begins with; and the last step of a comparing question may only write the option whose "
                "number wins, where both documents give one.",
            ),
            click.option(
                "--fresh-calls/--no-fresh-calls",
                default=False,
                show_default=True,
                help="Each step's grammar leaves out the tool calls the run has already made (case and spacing "
                "ignored) and lookups with no further match, so the model cannot loop on a call that would only "
                "be refused as a repeat. Strategies on react's loop (react, verify).",
            ),
            click.option(
                "--search-after-refusal/--no-search-after-refusal",
                default=False,
                show_default=True,
                help="With --agent verify: after a Final refused for want of a fact and shown no document (not in "
                "what the run has read, repeats the question, names nothing, not the kind of thing asked for, dates "
                "another event), the next step may only search.",
            ),
            click.option(
                "--read-hop/--no-read-hop",
                default=ANSWER_DEFAULTS["read_hop"],
                show_default=True,
                help="With --grounded and --agent verify: a Final refused as the entity on the way (not the kind of "
                "thing asked for, or the entity the question describes) also has the model answer the question from "
                "that entity's own document alone, in one call, and shows the answer it found there with its "
                "sentence.",
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


def session_options(*, corpus: bool = True) -> Decorator:
    """The corpus (unless `corpus` is False: `mcp` takes --index), the strategy and the grammar switch of a session
    that answers questions (ask, chat, mcp)."""
    from offline_agent.agents import AGENTS, DEFAULT_AGENT

    corpus_option = click.option(
        "--corpus",
        "-c",
        metavar="DIR_OR_INDEX",
        help="Folder or file of documents, an index folder, or an index name. Default: the sample corpus.",
    )
    return _stack(
        [
            *([corpus_option] if corpus else []),
            click.option(
                "--agent",
                type=click.Choice(sorted(AGENTS)),
                default=DEFAULT_AGENT,
                show_default=True,
                help="Agent strategy (verify: ReAct whose Finals are checked before they count).",
            ),
            click.option(
                "--no-grammar", is_flag=True, help="Generate without the grammar (the parser still checks every step)."
            ),
        ]
    )


def evidence_options() -> Decorator:
    """--search-k, --snippets and --title-boost: what a search shows the model."""
    from offline_agent.agents import ANSWER_DEFAULTS
    from offline_agent.tools.corpus import SNIPPETS

    return _stack(
        [
            click.option(
                "--search-k",
                type=click.IntRange(1, 20),
                default=ANSWER_DEFAULTS["search_k"],
                show_default=True,
                help="Passages per search.",
            ),
            click.option(
                "--snippets",
                "snippet",
                type=click.Choice(SNIPPETS),
                default=ANSWER_DEFAULTS["snippet"],
                show_default=True,
                help="What a search shows of each passage: its head (first 600 characters), or its first sentence "
                "and the --sentences - 1 others that best match the query and the question.",
            ),
            click.option(
                "--sentences",
                type=click.IntRange(1, 20),
                default=ANSWER_DEFAULTS["sentences"],
                show_default=True,
                help="With --snippets sentences: sentences shown per passage, its first one included.",
            ),
            click.option(
                "--title-boost/--no-title-boost",
                default=False,
                show_default=True,
                help="Put the document whose title the query names first, whatever its BM25 rank.",
            ),
            click.option(
                "--observation-tokens",
                type=click.IntRange(32, 4096),
                default=ANSWER_DEFAULTS["observation_tokens"],
                show_default=True,
                help="An Observation longer than this many tokens is cut (at a word, marked with ...).",
            ),
            click.option(
                "--links",
                type=click.IntRange(0, 20),
                default=ANSWER_DEFAULTS["links"],
                show_default=True,
                help="Also show up to N documents that the found passages name (their title is written in a "
                "passage), after the passages: the next hop of a question, without another search.",
            ),
        ]
    )


def scope_option() -> Decorator:
    """--scope: what the corpus is about; questions outside it are refused before any search."""
    return click.option(
        "--scope",
        metavar="TEXT_OR_FILE",
        default=None,
        help="What the documents are about (text, or a file holding it): a question outside it gets a short refusal "
        "(stop reason out_of_scope) before any search. Default: the scope stored with the index (`index --scope`) or "
        "the sample corpus's; --scope '' turns the check off.",
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


def _backend_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    name = value or DEFAULT_BACKEND
    if name not in BACKENDS and name not in BACKEND_ALIASES:
        raise click.BadParameter(f"unknown backend {name!r}; choose from {', '.join(sorted(BACKENDS))}")
    return BACKEND_ALIASES.get(name, name)


def backend_options() -> Decorator:
    """--backend and every backend's own settings; each help says which backend takes it."""
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
                "PyTorch) or http (a model server at --server-url) [env OFFLINE_AGENT_BACKEND].",
            ),
            click.option(
                "--gpu-layers",
                type=int,
                envvar="OFFLINE_AGENT_GPU_LAYERS",
                default=None,
                help="llamacpp: layers to offload to the GPU (-1: all; needs llama-cpp-python built for the GPU, "
                "see the README) [env OFFLINE_AGENT_GPU_LAYERS; default 0].",
            ),
            click.option(
                "--threads",
                type=click.IntRange(1, 512),
                envvar="OFFLINE_AGENT_THREADS",
                default=None,
                help="llamacpp, transformers: CPU threads [env OFFLINE_AGENT_THREADS; default: every core]. Use "
                "fewer when other programs keep cores busy: llama.cpp's threads wait on each other.",
            ),
            click.option(
                "--grammar-engine",
                type=click.Choice(["llguidance", "llama.cpp-check", "llama.cpp"]),
                default=None,
                help="llamacpp: llguidance (the default) checks the sampled token and jumps forward over forced ones "
                "(fastest); llama.cpp-check checks the sampled token with llama.cpp's grammar code (no "
                "jump-forward); llama.cpp is llama-cpp-python's grammar= sampler (checks the whole vocabulary at "
                "every token).",
            ),
            click.option(
                "--no-jump-forward",
                is_flag=True,
                default=None,
                help="llamacpp, transformers: sample every token, even those the grammar forces.",
            ),
            click.option(
                "--draft-tokens",
                type=click.IntRange(0, 32),
                default=None,
                help="llamacpp: speculative decoding: guess up to N tokens ahead by copying from the prompt (what "
                "follows the last few tokens where they occurred before) and check them in one evaluation. Exact in "
                "logic, but llama.cpp's logits shift with how tokens are batched, so near-ties can flip (2 of 11 "
                "agent runs of the default model answered otherwise) and on 2 CPU cores it is slower. 0 turns it "
                "off [default: 0].",
            ),
            click.option(
                "--device",
                type=click.Choice(["cpu", "cuda"]),
                default=None,
                help="transformers: where the model runs [default: cpu].",
            ),
            click.option(
                "--server-url",
                metavar="URL",
                envvar="OFFLINE_AGENT_SERVER_URL",
                default=None,
                help="http: the server's base URL, e.g. http://127.0.0.1:8080 [env OFFLINE_AGENT_SERVER_URL]; "
                "an API key is read from OFFLINE_AGENT_API_KEY.",
            ),
            click.option(
                "--server-kind",
                type=click.Choice(SERVER_KINDS),
                default=None,
                help="http: the server's dialect [default: detected from the server].",
            ),
            click.option(
                "--server-timeout",
                type=click.FloatRange(min=1.0),
                default=None,
                callback=_finite_seconds,
                metavar="SECONDS",
                help="http: seconds to wait for the server's answer to one request [default: 120].",
            ),
            click.option(
                "--verbose",
                is_flag=True,
                default=None,
                help="llamacpp, transformers: show the engine's own log on stderr (e.g. how many layers went to the "
                "GPU).",
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
