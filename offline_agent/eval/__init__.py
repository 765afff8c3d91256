"""Evaluation: answer metrics now; datasets, the resumable runner and reports build on them."""

from __future__ import annotations

from offline_agent.eval.metrics import exact_match, f1_precision_recall, f1_score, normalize_answer

__all__ = ["exact_match", "f1_precision_recall", "f1_score", "normalize_answer"]
