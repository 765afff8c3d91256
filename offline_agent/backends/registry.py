"""The one table of backends (name -> class and the options it takes) and the one function that builds them.

The CLI (`ask`, `chat`, `eval`), the evaluation runner and the benchmarks all build their backend through
`build_backend`, so a backend's options are checked in one place: an option a backend does not take is refused
with a one-line ConfigError naming the backend and the options it does take, never silently dropped. A backend
module is imported only when it is chosen (torch and transformers are heavy), through the `target` of its entry;
its class builds itself from `BackendOptions` with a `from_options` class method.

Adding a backend is one module under `offline_agent/backends/` and one `BackendEntry` here.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from offline_agent.backends.base import Backend
from offline_agent.errors import ConfigError, ModelError

DEFAULT_BACKEND = "llamacpp"
# Earlier versions recorded the llama.cpp backend as "llama.cpp" in trajectories and run folders.
BACKEND_ALIASES = {"llama.cpp": "llamacpp"}
# The largest seed every backend keeps as given: llama.cpp takes 32 bits and reads 2**32 - 1 as "a random seed"
# (numpy, the guided sampler's, refuses a negative one).
MAX_SEED = 2**32 - 2

# Every option a backend may take, with the command-line flag that sets it (used in error messages and --help).
OPTION_FLAGS: dict[str, str] = {
    "model": "--model",
    "context_size": "--context-size",
    "seed": "--seed",
    "gpu_layers": "--gpu-layers",
    "threads": "--threads",
    "grammar_engine": "--grammar-engine",
    "jump_forward": "--no-jump-forward",
    "draft_tokens": "--draft-tokens",
    "parallel": "--parallel",
    "verbose": "--verbose",
    "device": "--device",
    "server_url": "--server-url",
    "server_kind": "--server-kind",
    "api_key": "OFFLINE_AGENT_API_KEY",
    "timeout": "--server-timeout",
}


@dataclass(frozen=True)
class BackendOptions:
    """What a user may say about the backend; None means "not given" (the backend's own default applies)."""

    model: str | None = None  # registry name or path (llamacpp, transformers); the served model's name (http)
    context_size: int | None = None
    seed: int | None = None
    gpu_layers: int | None = None
    threads: int | None = None
    grammar_engine: str | None = None
    jump_forward: bool | None = None
    draft_tokens: int | None = None  # speculative decoding: most draft tokens per evaluation (0: off)
    parallel: int | None = None  # sequences decoded together in one context, for as many threads (eval)
    verbose: bool | None = None
    device: str | None = None
    server_url: str | None = None
    server_kind: str | None = None
    api_key: str | None = None
    timeout: float | None = None

    def given(self) -> list[str]:
        """The names of the options that were given (not None)."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


@dataclass(frozen=True)
class BackendEntry:
    """One registered backend: where its class lives, which options it takes, and what it is."""

    name: str
    target: str  # "module:Class"; the class has a from_options(BackendOptions) class method
    options: tuple[str, ...]
    summary: str
    # It runs the model inside this process (one completion at a time unless the backend batches, --parallel).
    in_process: bool = True
    install_hint: str = ""

    def load_class(self) -> Any:
        module_name, _, class_name = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f": {self.install_hint}" if self.install_hint else ""
            raise ModelError(f"backend {self.name!r} cannot be imported ({exc}){hint}") from exc
        return getattr(module, class_name)


_COMMON = ("model", "context_size", "seed")

BACKENDS: dict[str, BackendEntry] = {
    entry.name: entry
    for entry in (
        BackendEntry(
            name="llamacpp",
            target="offline_agent.backends.llamacpp:LlamaCppBackend",
            options=(
                *_COMMON,
                "gpu_layers",
                "threads",
                "grammar_engine",
                "jump_forward",
                "draft_tokens",
                "parallel",
                "verbose",
            ),
            summary="a GGUF model in llama.cpp (llama-cpp-python), in this process",
            install_hint="pip install llama-cpp-python==0.3.36",
        ),
        BackendEntry(
            name="transformers",
            target="offline_agent.backends.transformers:TransformersBackend",
            options=(*_COMMON, "device", "threads", "jump_forward", "verbose"),
            summary="a local Hugging Face model folder or a GGUF file in transformers (PyTorch), in this process",
            install_hint="pip install torch==2.13.0 (the CPU build), then pip install 'offline-agent[transformers]'",
        ),
        BackendEntry(
            name="http",
            target="offline_agent.backends.http:HttpBackend",
            options=(*_COMMON, "server_url", "server_kind", "api_key", "timeout"),
            summary="a model server (llama.cpp's llama-server, llama-cpp-python's server, vLLM, SGLang) over HTTP",
            in_process=False,
        ),
    )
}


def backend_entry(name: str | None) -> BackendEntry:
    """The registered backend called `name` (or an alias of it); None means the default."""
    key = BACKEND_ALIASES.get(name or DEFAULT_BACKEND, name or DEFAULT_BACKEND)
    try:
        return BACKENDS[key]
    except KeyError:
        raise ConfigError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)}") from None


def canonical_backend_name(name: str | None) -> str:
    """The registry name of `name`, aliases resolved (used to compare recorded configurations)."""
    return BACKEND_ALIASES.get(name or DEFAULT_BACKEND, name or DEFAULT_BACKEND)


def check_options(name: str | None, options: BackendOptions, *, ignore: frozenset[str] = frozenset()) -> BackendOptions:
    """`options` without those in `ignore` that the backend does not take; any other option it does not take is a
    ConfigError naming the backend (the CLI puts options set through environment variables in `ignore`)."""
    entry = backend_entry(name)
    refused = [option for option in options.given() if option not in entry.options and option not in ignore]
    if refused:
        flags = ", ".join(OPTION_FLAGS[o] for o in refused)
        takes = ", ".join(OPTION_FLAGS[o] for o in entry.options)
        verb = "does" if len(refused) == 1 else "do"
        raise ConfigError(f"{flags} {verb} not apply to backend {entry.name!r} (it takes {takes})")
    dropped = {option: None for option in options.given() if option not in entry.options}
    return replace(options, **dropped) if dropped else options


_SETUP_LIMIT: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("setup_limit", default=None)


@contextlib.contextmanager
def setup_time_limit(seconds: float | None) -> Iterator[None]:
    """Backends built in this block must be ready within `seconds` from now (the CLI's --max-seconds, which bounds
    the whole run): a backend that waits on something outside the process (a model server's detection and probe)
    reads `setup_deadline`. None: no limit."""
    token = _SETUP_LIMIT.set(None if seconds is None else (time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _SETUP_LIMIT.reset(token)


def setup_deadline() -> tuple[float | None, float | None]:
    """(the time.monotonic() by which a backend being built must be ready, the seconds that limit was given as), or
    (None, None) when there is none."""
    limit = _SETUP_LIMIT.get()
    return limit if limit is not None else (None, None)


def build_backend(
    name: str | None = None,
    options: BackendOptions | Mapping[str, Any] | None = None,
    *,
    ignore: frozenset[str] = frozenset(),
    **settings: Any,
) -> Backend:
    """Build the backend `name` (default llamacpp) from `options` and/or keyword settings.

    `build_backend("llamacpp", model="smollm2-135m-instruct", threads=2)`;
    `build_backend("http", server_url="http://127.0.0.1:8080")`. An option the backend does not take is a
    ConfigError, unless it is named in `ignore` (then it is dropped).
    """
    if options is None:
        options = BackendOptions()
    elif not isinstance(options, BackendOptions):
        options = _options_from(dict(options))
    if settings:
        options = _merge(options, settings)
    entry = backend_entry(name)
    options = check_options(entry.name, options, ignore=ignore)
    return entry.load_class().from_options(options)


def _options_from(values: dict[str, Any]) -> BackendOptions:
    known = {f.name for f in fields(BackendOptions)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown backend option(s) {unknown}; choose from {sorted(known)}")
    return BackendOptions(**values)


def _merge(options: BackendOptions, settings: dict[str, Any]) -> BackendOptions:
    _options_from(settings)  # unknown names fail here
    return replace(options, **settings)


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment, with a clear error when it is not one."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {value!r}") from None


def chat_format_template(chat_format: str | None, model_name: str) -> str | None:
    """What a registry entry's chat_format asks for: "template" (the model file's own template, read by the
    backend), None (no chat wrapping: raw text) or a template text (chatml)."""
    from offline_agent.prompts import CHATML_TEMPLATE

    if chat_format in (None, "template"):
        return "template"
    if chat_format == "none":
        return None
    if chat_format == "chatml":
        return CHATML_TEMPLATE
    raise ConfigError(f"model {model_name!r}: unsupported chat_format {chat_format!r}; use template, none or chatml")


__all__ = [
    "BACKENDS",
    "BACKEND_ALIASES",
    "BackendEntry",
    "BackendOptions",
    "DEFAULT_BACKEND",
    "OPTION_FLAGS",
    "backend_entry",
    "build_backend",
    "canonical_backend_name",
    "chat_format_template",
    "check_options",
    "env_int",
]
