"""Filling a llama.cpp batch: what the one-sequence backend (llamacpp.py, its drafts) and the batched scheduler
(batched.py, many sequences in one context) both do, below both so that neither imports the other for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def fill_batch(batch: Any, entries: Sequence[tuple[int, int, int, bool]]) -> None:
    """Fill a llama_batch with (token, position, sequence id, wants logits) entries."""
    batch.n_tokens = len(entries)
    for i, (token, position, seq_id, logits) in enumerate(entries):
        batch.token[i] = token
        batch.pos[i] = position
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq_id
        batch.logits[i] = logits


__all__ = ["fill_batch"]
