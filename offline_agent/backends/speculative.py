"""Drafts for speculative decoding, looked up in the prompt itself (prompt lookup).

Why: what an agent writes is often copied from what it has read: the entity it searches comes from the question,
the answer from an Observation, the tool line from the worked examples. When the last few tokens written also
occur earlier in the prompt, the tokens that followed them there are a cheap guess at what comes next. The
backend evaluates the guess in the same llama_decode call as the token before it and keeps the part the model
(and the grammar) would have written anyway, so an accepted draft saves a decode call per token.

`PromptLookup` indexes every n-gram of the context (n from `ngram_min` to `ngram_max`) by where its most recent
occurrence ended, and grows the index as tokens are committed. `propose` looks up the longest n-gram that ends
the context and returns up to `limit` tokens that followed its latest earlier occurrence: the most recent text
(the last Observation) is the likeliest source of what is copied next. No match, no draft. The drafter is
deterministic (the same context gives the same draft), which the sampling side relies on (guided.TokenSampler).
"""

from __future__ import annotations

from collections.abc import Iterable

NGRAM_MIN = 2
NGRAM_MAX = 4
# The most draft tokens per evaluation when `ask`, `chat` and `eval` are not told (--draft-tokens); 0 is off.
DEFAULT_DRAFT_TOKENS = 0


class PromptLookup:
    """Proposes the continuation of the longest n-gram that ends the context and occurred in it before."""

    def __init__(self, tokens: Iterable[int] = (), *, ngram_min: int = NGRAM_MIN, ngram_max: int = NGRAM_MAX) -> None:
        if not 1 <= ngram_min <= ngram_max:
            raise ValueError("n-gram sizes must satisfy 1 <= ngram_min <= ngram_max")
        self.ngram_min = ngram_min
        self.ngram_max = ngram_max
        self.tokens: list[int] = []
        # n -> n-gram -> the index just after its latest occurrence that has a token after it
        self._next: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in range(ngram_min, ngram_max + 1)}
        self.extend(tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        """Append committed tokens to the context."""
        ctx = self.tokens
        for token in tokens:
            end = len(ctx)  # the n-grams ending just before `token` now have a continuation: `token`
            for n, table in self._next.items():
                if end >= n:
                    table[tuple(ctx[end - n : end])] = end
            ctx.append(int(token))

    def propose(self, limit: int) -> list[int]:
        """Up to `limit` tokens that followed the longest n-gram ending the context where it last occurred."""
        ctx = self.tokens
        if limit < 1:
            return []
        for n in range(self.ngram_max, self.ngram_min - 1, -1):
            if len(ctx) <= n:
                continue
            start = self._next[n].get(tuple(ctx[-n:]))
            if start is not None:
                return ctx[start : start + limit]
        return []
