"""A backend that replays queued outputs, for testing the agent loop's logic without a model.

Queue strings (finish reason "stop") or whole Completion objects (to fake a cut-off at max_tokens, say) with
`enqueue()`; every call is recorded in `calls` so tests can check the prompts and grammars the loop sent.
Running out of outputs raises ModelError, as a model that fails mid-run would.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback, gbnf_of
from offline_agent.errors import ModelError
from offline_agent.prompts import CHATML_TEMPLATE
from offline_agent.steps import Completion, Usage


@dataclass
class ScriptedCall:
    prompt: str
    grammar: str | None
    max_tokens: int
    stop: tuple[str, ...]
    temperature: float
    seed: int | None


class ScriptedBackend:
    """Returns the queued outputs in order, one per call."""

    name = "scripted"
    bos_token: str | None = None
    eos_token: str | None = None
    # It replays text, so it enforces nothing; tests of the loop's logic may still hand it grammars and queue
    # Completions with rejections.
    capabilities = BackendCapabilities(supports_grammar=False, reuses_prefix_cache=False, reports_rejections=True)

    def __init__(self, outputs: Iterable[str | Completion] = (), *, context_size: int = 4096) -> None:
        self._queue: deque[str | Completion] = deque(outputs)
        self.calls: list[ScriptedCall] = []
        self.context_size = context_size
        self.chat_template: str | None = CHATML_TEMPLATE

    def enqueue(self, *outputs: str | Completion) -> None:
        self._queue.extend(outputs)

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
    ) -> Completion:
        gbnf = None if grammar is None else gbnf_of(grammar)
        self.calls.append(ScriptedCall(prompt, gbnf, max_tokens, tuple(stop), temperature, seed))
        if not self._queue:
            raise ModelError("the scripted backend has no more outputs queued")
        item = self._queue.popleft()
        if isinstance(item, Completion):
            completion = item
        else:
            text = item
            for marker in stop:
                if marker in text:
                    text = text[: text.index(marker)]
            completion = Completion(text=text, finish_reason="stop")
        if not completion.usage.prompt_tokens:
            completion.usage = Usage(self.count_tokens(prompt), 0, self.count_tokens(completion.text))
        if on_token is not None and completion.text:
            on_token(completion.text)
        return completion

    def warm(self, prefix: str) -> None:
        """Nothing to cache: the scripted backend evaluates no prompt."""

    def count_tokens(self, text: str) -> int:
        # About four characters a token, like the small BPE vocabularies this stands in for.
        return (len(text) + 3) // 4

    def describe(self) -> dict[str, Any]:
        return {"name": "scripted", "path": None, "sha256": None}
