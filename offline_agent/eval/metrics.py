"""Answer metrics with HotpotQA's official normalisation: exact match and token F1.

Normalisation lowercases, drops punctuation, drops the articles a/an/the and collapses whitespace. As in the
official script, when either side normalises to "yes", "no" or "noanswer", F1 is zero unless both are equal.
"""

from __future__ import annotations

from collections import Counter

from offline_agent.normalize import normalize_answer

_SPECIAL = ("yes", "no", "noanswer")


def exact_match(prediction: str | None, gold: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0 (no prediction scores 0)."""
    if prediction is None:
        return 0.0
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_precision_recall(prediction: str | None, gold: str) -> tuple[float, float, float]:
    """Token-level F1, precision and recall of the normalised answers."""
    if prediction is None:
        return 0.0, 0.0, 0.0
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if (predicted in _SPECIAL or expected in _SPECIAL) and predicted != expected:
        return 0.0, 0.0, 0.0
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    same = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(predicted_tokens)
    recall = same / len(expected_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def f1_score(prediction: str | None, gold: str) -> float:
    return f1_precision_recall(prediction, gold)[0]
