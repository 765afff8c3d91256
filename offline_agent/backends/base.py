"""The Backend protocol: what the agent loop asks of a model, whatever runs it.

`complete(prompt, *, grammar, max_tokens, stop, temperature, seed, on_token) -> Completion`: the text of one model
turn, why it ended, and what it cost (prompt, cached and generated tokens; prompt, generation and grammar seconds).
`chat_template` is the model's own Jinja template (None for a raw-text model), `bos_token` and `eos_token` are the
special tokens a template may write (as text; None when the model has none), and `count_tokens` measures text in
the model's tokens, so the loop can cut Observations and watch the context window. `capabilities` says what a
backend can do beyond writing text; a metric that needs a capability the backend lacks is reported as n/a, not 0.

A class fits the protocol by having these members; it need not subclass anything (tests/test_backend_contract.py
runs a plain class through the agent). Backends are built by name through `registry.build_backend`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from offline_agent.steps import Completion

TokenCallback = Callable[[str], None]


@runtime_checkable
class DecoderGrammar(Protocol):
    """A step's grammar as a backend receives it: GBNF, and optionally the same language in llguidance's Lark
    dialect (grammar.StepGrammar has both; a plain string is GBNF)."""

    gbnf: str
    llguidance: str | None


def gbnf_of(grammar: str | DecoderGrammar) -> str:
    """The GBNF text of a grammar handed to `complete`."""
    return grammar if isinstance(grammar, str) else grammar.gbnf


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend can do beyond writing text."""

    # It enforces a GBNF grammar while decoding (a backend without it must not be handed a grammar silently).
    supports_grammar: bool = False
    # It keeps the previous prompt's tokens and reports how many it reused (Usage.cached_tokens).
    reuses_prefix_cache: bool = False
    # It fills Completion.rejections: where the grammar refused the model's first choice.
    reports_rejections: bool = False
    # count_tokens uses the model's own tokenizer (False: an estimate, e.g. a server without a tokenize endpoint).
    exact_token_counts: bool = True
    # complete() may be called from several threads at once (a server that batches, or llama.cpp with --parallel:
    # several sequences in one context); otherwise one call at a time.
    concurrent_requests: bool = False


@runtime_checkable
class Backend(Protocol):
    """A loaded model that writes one completion at a time."""

    name: str
    context_size: int
    chat_template: str | None
    bos_token: str | None
    eos_token: str | None
    capabilities: BackendCapabilities

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | DecoderGrammar | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        seed: int | None = None,
        on_token: TokenCallback | None = None,
        deadline: float | None = None,
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    def warm(self, prefix: str) -> None:
        """Get ready for prompts that start with `prefix` (the part every question shares): a backend with a
        prefix cache evaluates it now or loads it from an earlier run; others do nothing."""
        ...

    def describe(self) -> dict[str, Any]:
        """What identifies the model in a trajectory (name, path, sha256, settings)."""
        ...


def aside(backend: Backend) -> AbstractContextManager[None]:
    """A block whose calls leave the backend's prompt cache as it was before them: a side question on a prompt of
    its own (verify.py's `sides`) would otherwise evict the run's prompt, and its next step would evaluate that
    anew. A backend with a prefix cache does it with its own `aside()`; for any other this does nothing."""
    method = getattr(backend, "aside", None)
    return method() if method is not None else contextlib.nullcontext()
