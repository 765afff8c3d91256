"""One grammar-constrained completion as a sequence of model evaluations, whoever runs the model.

Why a module of its own: the llama.cpp backend decodes one sequence at a time, and the batched scheduler
(backends/batched.py) decodes several sequences in one llama_decode call; both must pick exactly the same tokens
the same way. `GuidedDecoder` holds everything one completion decides (the sampler, the grammar matcher,
jump-forward, the drafts of speculative decoding, and the CompletionStream with its stop strings, max_tokens
and deadline) and nothing about how the model is run. Its caller loops:

    tokens, committed = decoder.next_batch()   # committed tokens first, then a draft (possibly empty)
    ... evaluate `tokens` after what the cache holds, with logits from tokens[committed - 1] on ...
    kept = decoder.take(row)                   # row(j): the logits after tokens[committed - 1 + j]
    ... drop tokens[kept:] from the cache ...

until `decoder.done`. Without a draft this is the plain loop (sample a token, append the tokens the grammar
forces, evaluate them in one batch). With a draft (speculative decoding), each logits row picks a token exactly as
the plain loop would (greedy: the same token; sampling: the same distribution, guided.TokenSampler.pick), and
draft tokens are kept only while they equal the tokens picked, so the text is the text of plain decoding.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from offline_agent.backends.guided import TokenSampler, allowed_prefix, consume_with_forced, next_token
from offline_agent.backends.speculative import PromptLookup
from offline_agent.backends.stream import CompletionStream, common_prefix

LogitsRow = Callable[[int], np.ndarray]


class GuidedDecoder:
    """The decisions of one completion: which tokens to evaluate next, and what the logits after them mean.

    `matcher`/`guide`: the grammar's matcher and its cache (None, None: free text). `is_end`: whether a token ends
    the text (end of generation). `drafter`: a PromptLookup over the prompt, or None for plain decoding;
    `draft_tokens` caps a draft.
    """

    def __init__(
        self,
        stream: CompletionStream,
        sampler: TokenSampler,
        matcher: Any,
        guide: Any,
        *,
        is_end: Callable[[int], bool],
        jump_forward: bool = True,
        drafter: PromptLookup | None = None,
        draft_tokens: int = 0,
    ) -> None:
        self.stream = stream
        self.sampler = sampler
        self.matcher = matcher
        self.guide = guide
        self.is_end = is_end
        self.jump_forward = jump_forward
        self.drafter = drafter if draft_tokens > 0 else None
        self.draft_tokens = draft_tokens
        self.pending: list[int] = []
        self.draft: list[int] = []
        self.done = False

    def start(self, uncached: list[int]) -> None:
        """Begin with the prompt tokens the cache does not hold yet (at least one: the logits must be fresh)."""
        if not uncached:
            raise ValueError("at least one prompt token must be evaluated")
        self.pending = list(uncached)
        self.draft = []
        self.done = False

    def next_batch(self) -> tuple[list[int], int]:
        """The tokens to evaluate next (the committed ones, then a draft) and how many of them are committed."""
        self.draft = self._propose()
        self.stream.drafted += len(self.draft)
        return self.pending + self.draft, len(self.pending)

    def _propose(self) -> list[int]:
        if self.drafter is None:
            return []
        # A draft token is worth evaluating only if a token may still follow it.
        room = self.stream.max_tokens - len(self.stream.tokens) - 1
        draft = self.drafter.propose(min(self.draft_tokens, room))
        if draft and self.matcher is not None:
            draft = draft[: allowed_prefix(self.matcher, draft)]
        return draft

    def take(self, row: LogitsRow) -> int:
        """Pick tokens from the logits of the last batch; returns how many of its tokens stay in the cache.

        `row(j)` is the logits row after the last committed token and j draft tokens. Each row picks a token as
        plain decoding would (the draft token at that place only tells a sampler which token to try first); the
        tokens the grammar then forces are appended. While what is picked equals the draft, the next row is
        already computed; at the first difference the draft's rest is dropped, and the tokens picked but not yet
        evaluated are the next batch's committed tokens.
        """
        stream, matcher = self.stream, self.matcher
        kept = len(self.pending)
        at = 0  # draft tokens accepted so far in this batch
        while True:
            logits = row(at)
            proposal = self.draft[at] if at < len(self.draft) else None
            checked = time.perf_counter()
            token, masked = next_token(self.sampler, logits, matcher, self.guide, proposal)
            if masked:
                stream.reject(int(np.argmax(logits)), matcher)
            if self.is_end(token):
                stream.grammar_time(checked)
                stream.finish("stop")
                return self._finish(kept)
            new = [token]
            if matcher is not None:
                new = consume_with_forced(matcher, token, self.jump_forward)
                stream.grammar_time(checked, masked=masked, forced=len(new) - 1)
            matched = common_prefix(new, self.draft[at:])
            stream.accepted += matched
            kept += matched
            at += matched
            if self.drafter is not None:
                self.drafter.extend(new)
            if not stream.add(new):
                return self._finish(kept)
            if matcher is not None and matcher.is_stopped():
                stream.finish("stop")  # the grammar is complete: no need to ask for the end-of-text token
                return self._finish(kept)
            if matched < len(new):
                self.pending = new[matched:]
                return kept

    def _finish(self, kept: int) -> int:
        self.done = True
        self.pending = []
        return kept
