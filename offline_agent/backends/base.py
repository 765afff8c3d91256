"""The Backend protocol: what the agent loop asks of a model, whatever runs it.

`complete(prompt, *, grammar, max_tokens, stop, temperature, seed, on_token) -> Completion`: the text of one model
turn, why it ended, and what it cost (prompt, cached and generated tokens; prompt, generation and grammar seconds).
`chat_template` is the model's own Jinja template (None for a raw-text model) and `count_tokens` measures text
in the model's tokens, so the loop can cut Observations and watch the context window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from offline_agent.steps import Completion

TokenCallback = Callable[[str], None]


@runtime_checkable
class Backend(Protocol):
    """A loaded model that writes one completion at a time."""

    name: str
    context_size: int
    chat_template: str | None

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        seed: int | None = None,
        on_token: TokenCallback | None = None,
        deadline: float | None = None,
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    def describe(self) -> dict[str, Any]:
        """What identifies the model in a trajectory (name, path, sha256, settings)."""
        ...
