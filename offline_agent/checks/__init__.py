"""Answer checks: what the verify strategy asks of a Final before it counts, one module per family of checks.

A check (`FinalCheck`) looks at a `Candidate` (the question, the answer, the form the question asks for, the run so
far, and the corpus through a `DocumentSource`) and lets it stand or refuses it with the Observation the model reads
next; a rewrite (`AnswerRewrite`) writes an answer that stands in the form the question asks for. `CheckPipeline`
runs them in the order of `DEFAULT_CHECKS` (a strategy may pass its own list), with the rules of a run around them.

A check or rewrite is one module of this package (what it reads off the question and the answer, its trigger,
lives there with it) and one line in pipeline.py's ordered lists; answer_form.py holds only the answer's form, which
several of them share. The lists as they stand (`checks_table()`, written here when the package loads, so it
cannot drift; docs/answers.md holds the same table, and a test keeps the two equal):

"""

from __future__ import annotations

from offline_agent.checks.base import (
    CLOSED,
    EVERY_FORM,
    OPEN,
    AnswerRewrite,
    Candidate,
    Check,
    CheckHost,
    FinalCheck,
    Refusal,
)
from offline_agent.checks.pipeline import DEFAULT_CHECKS, DEFAULT_REWRITES, MAX_REFUSALS, CheckPipeline, checks_table

__all__ = [
    "CLOSED",
    "DEFAULT_CHECKS",
    "DEFAULT_REWRITES",
    "EVERY_FORM",
    "MAX_REFUSALS",
    "OPEN",
    "AnswerRewrite",
    "Candidate",
    "Check",
    "CheckHost",
    "CheckPipeline",
    "FinalCheck",
    "Refusal",
    "checks_table",
]

if __doc__ is not None:  # python -OO drops docstrings
    __doc__ += checks_table() + "\n"
