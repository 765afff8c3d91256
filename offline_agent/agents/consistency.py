"""Self-consistency: several runs of the same question, and the answer most of them agree on.

Why: a small model's greedy run is one path through many close choices (which entity to search, when to stop);
sampling a few more paths and keeping the answer they agree on smooths out a bad first choice, at K times the
cost. Run 1 is the configured run (greedy by default), so `samples=1` is exactly an ordinary run; runs 2..K
sample at SAMPLE_TEMPERATURE (or the configured temperature when it is higher) with their own seeds.

The vote: answers are compared after HotpotQA's normalisation (case, punctuation, articles); a run without an
answer does not vote; an abstention ("the documents do not say") votes as one answer of its own. The most
frequent answer wins; a tie goes to the answer of the earliest run among the tied ones (so run 1, the greedy one,
breaks ties). The winning answer is written as the earliest run wrote it.

The result is one Trajectory: the answer and stop reason of the vote, every run's steps in order (each step's
`details.sample` says which run it belongs to, so costs, titles seen and timings count every run), and
`samples`: per run its answer, stop reason, seed, temperature and seconds, plus the votes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from offline_agent.details import details_type
from offline_agent.grammar import ABSTAIN
from offline_agent.steps import Trajectory, Turn

SAMPLE_TEMPERATURE = 0.7
# The seed of run i is the configured seed plus SEED_STRIDE * i, far from the seed + step offsets of one run.
SEED_STRIDE = 1000


def vote(answers: Sequence[str | None]) -> tuple[int | None, dict[str, int]]:
    """(index of the winning run, votes per normalised answer); None when no run answered."""
    from offline_agent.normalize import normalize_answer

    keys = [normalize_answer(answer) if answer is not None else None for answer in answers]
    counts = Counter(key for key in keys if key is not None)
    if not counts:
        return None, {}
    best = max(counts.values())
    winner = next(i for i, key in enumerate(keys) if key is not None and counts[key] == best)
    return winner, dict(counts)


def run_samples(
    run: Callable[[Any], Trajectory], config: Any, samples: int, question: str, history: Sequence[Turn] = ()
) -> Trajectory:
    """Run `run(config_i)` for each of `samples` configurations and merge them by vote (see the module doc)."""
    started = time.monotonic()
    runs: list[Trajectory] = []
    for number in range(samples):
        sample_config = replace(config, samples=1)
        if number:
            sample_config = replace(
                sample_config,
                temperature=max(config.temperature, SAMPLE_TEMPERATURE),
                seed=config.seed + SEED_STRIDE * number,
            )
        if config.max_seconds:  # one budget for the question, not one per run
            left = config.max_seconds - (time.monotonic() - started)
            if left < 0.1:
                break
            sample_config = replace(sample_config, max_seconds=left)
        trajectory = run(sample_config)
        kind = details_type(trajectory.agent)
        for step in trajectory.steps:
            step.ensure_details(kind).sample = number
        runs.append(trajectory)
    # An abstention votes as an answer of its own: most runs saying the documents do not say is an abstention.
    winner, counts = vote([ABSTAIN if t.abstained else t.answer for t in runs])
    chosen = runs[winner] if winner is not None else runs[0]
    merged = replace(
        chosen,
        steps=[step for t in runs for step in t.steps],
        seconds=round(time.monotonic() - started, 3),
        history=list(history) if history else chosen.history,
    )
    merged.samples = [
        {
            "answer": t.answer,
            "stop_reason": t.stop_reason,
            "seed": t.seed,
            "temperature": t.temperature,
            "seconds": t.seconds,
            "steps": len(t.steps),
        }
        for t in runs
    ]
    merged.votes = counts
    if question:
        merged.question = question
    return merged


__all__ = ["SAMPLE_TEMPERATURE", "run_samples", "vote"]
