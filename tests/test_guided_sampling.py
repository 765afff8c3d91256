"""The guided sampler without a model: checking candidates first gives exactly the masked distribution."""

from __future__ import annotations

import numpy as np
import pytest

from offline_agent.backends.guided import SamplingSettings, TokenSampler, next_token


class FakeMatcher:
    """Allows a fixed set of token ids."""

    def __init__(self, allowed: set[int]) -> None:
        self.allowed = allowed
        self.checked = 0

    def validate_tokens(self, tokens: list[int]) -> int:
        self.checked += 1
        return int(tokens[0] in self.allowed)


class FakeCache:
    def __init__(self, allowed: set[int]) -> None:
        self.allowed = allowed
        self.masks = 0

    def masked(self, matcher: FakeMatcher, logits: np.ndarray) -> np.ndarray:
        self.masks += 1
        out = np.full_like(logits, -np.inf)
        index = sorted(self.allowed)
        out[index] = logits[index]
        return out


def reference(logits: np.ndarray, allowed: set[int], settings: SamplingSettings) -> np.ndarray:
    """llama.cpp's chain with the grammar first: mask, top-k, top-p and min-p on probabilities, temperature."""
    masked = np.full_like(logits, -np.inf, dtype=np.float64)
    index = sorted(allowed)
    masked[index] = logits[index]
    order = np.argsort(-masked, kind="stable")[: settings.top_k]
    order = order[np.isfinite(masked[order])]
    probs = np.exp(masked[order] - masked[order[0]])
    probs /= probs.sum()
    keep = min(len(order), int(np.searchsorted(np.cumsum(probs), settings.top_p) + 1))
    keep = min(keep, max(1, int(np.sum(probs >= settings.min_p * probs[0]))))
    scaled = masked[order[:keep]] / settings.temperature
    weights = np.exp(scaled - scaled[0])
    weights /= weights.sum()
    expected = np.zeros(logits.shape[0])
    expected[order[:keep]] = weights
    return expected


@pytest.mark.parametrize("case", ["all_allowed", "top_rejected", "few_allowed"])
def test_sampled_distribution_is_the_masked_one(case: str) -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 2.0, size=200).astype(np.float32)
    top = list(np.argsort(-logits)[:10])
    allowed = {
        "all_allowed": set(range(200)),
        "top_rejected": set(range(200)) - {int(top[0]), int(top[3])},
        "few_allowed": {int(top[5]), int(top[7]), 150, 151},
    }[case]
    settings = SamplingSettings(temperature=0.8, top_k=8, top_p=0.9, min_p=0.05)
    sampler, cache = TokenSampler(settings, seed=1), FakeCache(allowed)
    draws = 20000
    counts = np.zeros(200)
    for _ in range(draws):
        token, _ = next_token(sampler, logits, FakeMatcher(allowed), cache)
        assert token in allowed
        counts[token] += 1
    expected = reference(logits, allowed, settings)
    assert np.abs(counts / draws - expected).max() < 0.015
    assert (cache.masks == 0) == (case == "all_allowed")


def test_greedy_checks_only_the_argmax_when_it_is_allowed() -> None:
    logits = np.array([0.1, 3.0, 2.0, -1.0], dtype=np.float32)
    matcher, cache = FakeMatcher({1, 2}), FakeCache({1, 2})
    token, masked = next_token(TokenSampler(SamplingSettings(), seed=None), logits, matcher, cache)
    assert (token, masked, matcher.checked, cache.masks) == (1, False, 1, 0)


def test_greedy_masks_when_the_argmax_is_rejected() -> None:
    logits = np.array([0.1, 3.0, 2.0, -1.0], dtype=np.float32)
    token, masked = next_token(
        TokenSampler(SamplingSettings(), seed=None), logits, FakeMatcher({0, 3}), FakeCache({0, 3})
    )
    assert (token, masked) == (0, True)


def test_same_seed_same_draws() -> None:
    logits = np.linspace(0, 3, 50).astype(np.float32)
    settings = SamplingSettings(temperature=1.0)
    first = [next_token(s, logits, None, None)[0] for s in [TokenSampler(settings, 7)] for _ in range(30)]
    second = [next_token(s, logits, None, None)[0] for s in [TokenSampler(settings, 7)] for _ in range(30)]
    assert first == second and len(set(first)) > 1
