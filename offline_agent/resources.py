"""Finds the files the package ships (grammars, prompts, the model registry, the sample corpus).

In a wheel they sit under `offline_agent/_data/`; in a source checkout or an editable install they sit at the
repository root. Both layouts are looked up, wheel first.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_ROOTS = (_PACKAGE_DIR / "_data", _PACKAGE_DIR.parent)


def data_path(relative: str) -> Path:
    """Return the shipped file or folder at `relative` (e.g. "grammars/react.gbnf"), or the wheel path if absent."""
    for root in _ROOTS:
        candidate = root / relative
        if candidate.exists():
            return candidate
    return _ROOTS[0] / relative


def sample_corpus() -> Path:
    """The project's own sample corpus, used when no corpus is given."""
    return data_path("corpora/sample/docs")


def sample_questions() -> Path:
    """Questions whose answers the sample corpus holds."""
    return data_path("corpora/sample/questions.jsonl")
