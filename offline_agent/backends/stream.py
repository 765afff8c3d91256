"""The text of one completion as tokens arrive, shared by the backends that decode token by token.

A `CompletionStream` turns token ids into text through the backend's `decode`, cuts the text at the first stop
string, streams new text to `on_token`, ends on max_tokens or the monotonic deadline (finish reason
"interrupted"), notes where the grammar refused the model's first choice, and times the prompt and the
generation. llama.cpp and transformers both use it, so their Completions mean the same thing field by field.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from offline_agent.backends.base import TokenCallback
from offline_agent.steps import Completion, Timings, Usage

# decode(tokens, final): the text of `tokens`; while streaming (final False) an unfinished UTF-8 sequence at the
# end is left out rather than shown as a replacement character.
Decode = Callable[[list[int], bool], str]


class CompletionStream:
    """Accumulates one completion: stop strings, max_tokens, the deadline, rejections and the clock."""

    def __init__(
        self,
        decode: Decode,
        max_tokens: int,
        stop: Sequence[str],
        on_token: TokenCallback | None,
        deadline: float | None,
    ) -> None:
        self.decode = decode
        self.max_tokens = max_tokens
        self.stop = [marker for marker in stop if marker]
        self.on_token = on_token
        self.deadline = deadline
        self.tokens: list[int] = []
        self.text = ""
        self.reason = "length"
        self.cut = False
        self.started = time.perf_counter()
        self.prompt_at: float | None = None
        self.grammar_s = 0.0
        self.compile_s = 0.0  # compiling a grammar the backend had not seen (set by the backend)
        self.masked = 0
        self.forced = 0
        self.drafted = 0  # speculative decoding: draft tokens evaluated
        self.accepted = 0  # ... and those of them that became part of the text
        self.rejections: list[tuple[int, str]] = []

    def prompt_done(self) -> None:
        if self.prompt_at is None:
            self.prompt_at = time.perf_counter()

    def grammar_time(self, since: float, *, masked: bool = False, forced: int = 0) -> None:
        self.grammar_s += time.perf_counter() - since
        self.masked += masked
        self.forced += forced

    def reject(self, favourite: int, matcher: Any) -> None:
        """Note the model's first choice when the grammar refused it: where in the text, and what it was."""
        if matcher.validate_tokens([favourite]) == 0:
            self.rejections.append((len(self.text), self.decode([favourite], True)))

    def finish(self, reason: str) -> None:
        self.reason = reason

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def add(self, tokens: list[int]) -> bool:
        """Take new tokens; False when the completion is over (stop string, max_tokens, deadline)."""
        self.tokens += tokens
        text = self.decode(self.tokens, False)
        stop_at = min((text.find(m) for m in self.stop if m in text), default=None)
        if stop_at is not None:
            text, self.cut = text[:stop_at], True
        if self.on_token is not None and len(text) > len(self.text):
            self.on_token(text[len(self.text) :])
        self.text = text
        if stop_at is not None:
            self.reason = "stop"
            return False
        if len(self.tokens) >= self.max_tokens:
            self.reason = "length"
            return False
        if self.expired():
            self.reason = "interrupted"
            return False
        return True

    def completion(self, prompt_tokens: int, cached: int) -> Completion:
        ended = time.perf_counter()
        first = self.prompt_at or ended
        text = self.text if self.cut else self.decode(self.tokens, True)
        return Completion(
            text=text,
            finish_reason=self.reason,
            usage=Usage(prompt_tokens=prompt_tokens, cached_tokens=max(cached, 0), generated_tokens=len(self.tokens)),
            timings=Timings(
                prompt_s=first - self.started,
                generate_s=ended - first,
                grammar_s=self.grammar_s,
                compile_s=self.compile_s,
            ),
            tokens=list(self.tokens),
            masked_tokens=self.masked,
            forced_tokens=self.forced,
            drafted_tokens=self.drafted,
            accepted_tokens=self.accepted,
            rejections=list(self.rejections),
        )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading items `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
