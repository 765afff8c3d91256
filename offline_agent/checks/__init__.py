"""Answer checks: what the verify strategy asks of a Final before it counts, one module per family of checks.

A check (`FinalCheck`) looks at a `Candidate` (the question, the answer, the form the question asks for, the run so
far, and the corpus through a `DocumentSource`) and lets it stand or refuses it with the Observation the model reads
next; a rewrite (`AnswerRewrite`) writes an answer that stands in the form the question asks for. `CheckPipeline`
runs them in the order of `DEFAULT_CHECKS` (a strategy may pass its own list), with the rules of a run around them.

    reading.py   unread, one_side                what the run has not read (never excludes the answer)
    wording.py   in_question                     the answer against the question's own words
    kinds.py     kind, asks_for, described; the type noun    the kind of thing asked for
    referents.py referent, referred              what "that NOUN" refers to, not the thing the question names
    names.py     the name part, the person named, the full name        people's names
    dates.py     event; the date as written                            dates
    pairs.py     compare, sides, same, shared                          two things, each on its own document
    quantities.py  the unit as written                                 numbers with their units of measure
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
from offline_agent.checks.pipeline import DEFAULT_CHECKS, DEFAULT_REWRITES, MAX_REFUSALS, CheckPipeline

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
]
