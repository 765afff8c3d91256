"""Speculative decoding without a model: the prompt-lookup drafter, and drafts that change nothing.

A fake model (logits as a fixed function of the last two tokens) and a fake grammar drive the same GuidedDecoder
the llama.cpp backend uses, through a driver that keeps a cache the way the backend does. Greedy decoding with
drafts must give the plain tokens exactly; sampling with drafts must give the plain distribution (checked
against the exact probabilities of each short sequence, as test_guided_sampling checks single tokens).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_guided_sampling import FakeCache, reference

from offline_agent.backends.decoding import GuidedDecoder
from offline_agent.backends.guided import SamplingSettings, TokenSampler, next_token
from offline_agent.backends.speculative import PromptLookup
from offline_agent.backends.stream import CompletionStream

VOCAB = 8
END = 7  # the fake model's end-of-text token


# --- the drafter ----------------------------------------------------------------------------------------------


def test_no_context_no_draft() -> None:
    assert PromptLookup().propose(8) == []
    assert PromptLookup([1, 2, 3, 4]).propose(8) == []  # nothing repeats


def test_the_continuation_of_the_longest_ngram_at_its_latest_occurrence() -> None:
    #            0  1  2  3  4  5  6  7  8  9 10 11 12
    lookup = PromptLookup([5, 1, 2, 9, 9, 1, 2, 3, 4, 6, 0, 1, 2])
    assert lookup.propose(3) == [3, 4, 6]  # (1, 2) last occurred at 5-6, followed by 3 4 6
    lookup = PromptLookup([7, 1, 2, 8, 8, 0, 2, 3, 3, 7, 1, 2])
    assert lookup.propose(2) == [8, 8]  # (7, 1, 2) beats the more recent (2,)-only matches
    assert PromptLookup([1, 2, 3, 1, 2]).propose(10) == [3, 1, 2]  # up to the end of the context


def test_single_token_matches_are_not_drafts_by_default() -> None:
    assert PromptLookup([4, 5, 6, 4]).propose(3) == []
    assert PromptLookup([4, 5, 6, 4], ngram_min=1).propose(3) == [5, 6, 4]


def test_extend_grows_the_index() -> None:
    lookup = PromptLookup([1, 2, 3, 4])
    lookup.extend([9, 1])
    assert lookup.propose(4) == []
    lookup.extend([2])
    assert lookup.propose(4) == [3, 4, 9, 1]
    assert lookup.propose(0) == []


def test_bad_ngram_sizes() -> None:
    with pytest.raises(ValueError):
        PromptLookup(ngram_min=3, ngram_max=2)


# --- one token with a draft: the masked distribution, exactly ------------------------------------------------


class FakeMatcher:
    """A fake grammar: forbids the tokens in `banned`, and forces `forced[t]` right after token t."""

    def __init__(self, banned: set[int] = frozenset(), forced: dict[int, list[int]] | None = None) -> None:
        self.banned = set(banned)
        self.forced = forced or {}
        self.consumed: list[int] = []

    def validate_tokens(self, tokens: list[int]) -> int:
        n = 0
        for token in tokens:
            if token in self.banned:
                break
            n += 1
        return n

    def consume_token(self, token: int) -> bool:
        assert token not in self.banned
        self.consumed.append(token)
        return True

    def consume_tokens(self, tokens: list[int]) -> bool:
        return all(self.consume_token(t) for t in tokens)

    def compute_ff_tokens(self) -> list[int]:
        return list(self.forced.get(self.consumed[-1], [])) if self.consumed else []

    def is_stopped(self) -> bool:
        return False


@pytest.mark.parametrize("which", ["best", "third", "tail", "banned", "outside_top_k"])
def test_a_drafted_token_leaves_the_distribution_unchanged(which: str) -> None:
    rng = np.random.default_rng(3)
    logits = rng.normal(0, 1.5, size=60).astype(np.float32)
    order = [int(t) for t in np.argsort(-logits)]
    banned = {order[1]}
    allowed = set(range(60)) - banned
    draft = {"best": order[0], "third": order[2], "tail": order[6], "banned": order[1], "outside_top_k": order[30]}
    settings = SamplingSettings(temperature=0.9, top_k=10, top_p=0.95, min_p=0.02)
    sampler = TokenSampler(settings, seed=11)
    draws = 6000
    counts = np.zeros(60)
    for _ in range(draws):
        token, _ = next_token(sampler, logits, FakeMatcher(banned), FakeCache(allowed), draft[which])
        counts[token] += 1
    assert np.abs(counts / draws - reference(logits, allowed, settings)).max() < 0.025


def test_greedy_ignores_the_draft() -> None:
    logits = np.array([0.0, 2.0, 1.0], dtype=np.float32)
    sampler = TokenSampler(SamplingSettings(), seed=None)
    assert next_token(sampler, logits, None, None, draft=2) == (1, False)


# --- whole completions with a fake model ---------------------------------------------------------------------


class FakeModel:
    """Logits as a fixed random function of the last two tokens (a bigram-of-pairs model)."""

    def __init__(self, seed: int, sharp: float = 2.5) -> None:
        self.table = np.random.default_rng(seed).normal(0, sharp, size=(VOCAB, VOCAB, VOCAB)).astype(np.float32)

    def logits(self, context: list[int]) -> np.ndarray:
        return self.table[context[-2], context[-1]]


def letters(tokens: list[int], final: bool) -> str:
    """The fake model's text: one letter a token."""
    return "".join(chr(ord("a") + t) for t in tokens)


def decode(
    model: FakeModel,
    prompt: list[int],
    *,
    draft_tokens: int,
    settings: SamplingSettings,
    seed: int,
    matcher: FakeMatcher | None = None,
    max_tokens: int = 12,
) -> tuple[list[int], CompletionStream]:
    """Run a GuidedDecoder over the fake model, keeping a cache as the llama.cpp backend does."""
    stream = CompletionStream(letters, max_tokens, (), None, None)
    guide = FakeCache(set(range(VOCAB)) - matcher.banned) if matcher is not None else None
    decoder = GuidedDecoder(
        stream,
        TokenSampler(settings, seed),
        matcher,
        guide,
        is_end=lambda token: token == END,
        drafter=PromptLookup(prompt),
        draft_tokens=draft_tokens,
    )
    cache = list(prompt[:-1])
    decoder.start(prompt[-1:])
    while not decoder.done:
        batch, committed = decoder.next_batch()
        assert 1 <= committed <= len(batch) and len(batch) - committed <= draft_tokens
        base = len(cache)
        cache += batch
        kept = decoder.take(lambda j, c=cache, base=base, committed=committed: model.logits(c[: base + committed + j]))
        assert committed <= kept <= len(batch)
        del cache[base + kept :]
        # the cache holds the prompt and generated tokens only, in order
        assert cache == (prompt + stream.tokens)[: len(cache)]
    return stream.tokens, stream


PROMPTS = [[int(t) for t in np.random.default_rng(p).integers(0, END, size=30)] for p in range(40)]


@pytest.mark.parametrize("grammar", [False, True])
def test_greedy_with_drafts_gives_the_plain_tokens(grammar: bool) -> None:
    greedy = SamplingSettings()
    drafted = accepted = 0
    for i, prompt in enumerate(PROMPTS):
        model = FakeModel(i, sharp=4.0)
        banned, forced = {3}, {5: [6, 1]}
        plain, _ = decode(
            model,
            prompt,
            draft_tokens=0,
            settings=greedy,
            seed=0,
            matcher=FakeMatcher(banned, forced) if grammar else None,
        )
        fast, stream = decode(
            model,
            prompt,
            draft_tokens=6,
            settings=greedy,
            seed=0,
            matcher=FakeMatcher(banned, forced) if grammar else None,
        )
        assert fast == plain
        assert stream.accepted <= stream.drafted
        drafted += stream.drafted
        accepted += stream.accepted
    assert 0 < accepted < drafted  # drafts were tried, some kept and some not


def exact_probabilities(
    model: FakeModel, context: list[int], settings: SamplingSettings, length: int
) -> dict[tuple[int, ...], float]:
    """The probability of every completion of at most `length` tokens under plain sampling (no grammar); the end
    token ends a completion and is not part of its tokens."""
    if length == 0:
        return {(): 1.0}
    sampler = TokenSampler(settings, seed=0)
    logits = model.logits(context)
    tokens, weights = sampler.distribution(logits, sampler.candidates(logits))
    out: dict[tuple[int, ...], float] = {}
    for token, weight in zip(tokens.tolist(), weights.tolist(), strict=True):
        if token == END:
            out[()] = out.get((), 0.0) + weight
            continue
        for rest, p in exact_probabilities(model, [*context, token], settings, length - 1).items():
            out[(token, *rest)] = out.get((token, *rest), 0.0) + weight * p
    return out


def test_sampling_with_drafts_follows_the_plain_distribution() -> None:
    """Three-token completions from a prompt that repeats itself (so drafts are proposed and sometimes wrong):
    the frequency of each sequence matches its exact probability under plain sampling."""
    model = FakeModel(5, sharp=1.2)
    # The prompt ends with (1, 2), which occurred before followed by the model's likeliest next two tokens, so the
    # draft is often right, sometimes wrong.
    first = int(np.argsort(-model.table[1, 2])[0 if np.argmax(model.table[1, 2]) != END else 1])
    second = int(np.argsort(-model.table[2, first])[0 if np.argmax(model.table[2, first]) != END else 1])
    prompt = [3, 1, 2, first, second, 0, 6, 1, 2]
    settings = SamplingSettings(temperature=0.8, top_k=5, top_p=0.97, min_p=0.01)
    expected = exact_probabilities(model, prompt, settings, 3)
    draws = 8000
    counts: dict[tuple[int, ...], int] = {}
    drafted = accepted = 0
    for seed in range(draws):
        tokens, stream = decode(model, prompt, draft_tokens=4, settings=settings, seed=seed, max_tokens=3)
        counts[tuple(tokens)] = counts.get(tuple(tokens), 0) + 1
        drafted += stream.drafted
        accepted += stream.accepted
    assert set(counts) <= set(expected)
    worst = max(abs(counts.get(key, 0) / draws - p) for key, p in expected.items())
    assert worst < 0.02
    assert 0 < accepted < drafted


# --- the options: declared by llamacpp in the registry, refused elsewhere ---------------------------------------


@pytest.mark.parametrize("backend", ["http", "transformers"])
@pytest.mark.parametrize(("option", "flag"), [("draft_tokens", "--draft-tokens"), ("parallel", "--parallel")])
def test_other_backends_refuse_drafts_and_parallel(backend: str, option: str, flag: str) -> None:
    from offline_agent.backends.registry import BackendOptions, check_options
    from offline_agent.errors import ConfigError

    assert check_options("llamacpp", BackendOptions(**{option: 2})).given() == [option]
    with pytest.raises(ConfigError, match=flag):
        check_options(backend, BackendOptions(**{option: 2}))


def test_concurrency_and_parallel_must_agree(tmp_path) -> None:
    from offline_agent.backends.registry import BackendOptions
    from offline_agent.errors import ConfigError
    from offline_agent.eval.runner import EvalOptions

    assert EvalOptions(dataset=tmp_path, backend_options=BackendOptions(parallel=4)).in_flight == 4
    assert EvalOptions(dataset=tmp_path, concurrency=3).in_flight == 3
    with pytest.raises(ConfigError, match="--parallel 4"):
        EvalOptions(dataset=tmp_path, concurrency=2, backend_options=BackendOptions(parallel=4))
