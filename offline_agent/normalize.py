"""Answer normalisation, HotpotQA's official one: what "the same answer" means to every layer.

The agents compare answers with it (a refused answer written again, a choice's option) and the evaluation scores
with it, so it sits below both; `eval.metrics` re-exports it.
"""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, strip punctuation and articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


__all__ = ["normalize_answer"]
