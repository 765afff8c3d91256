"""Answers that are people's names, where the question asks for a part of one or for a person (two rewrites).

- the name part (a rewrite before the checks): a whole name that has the part asked is answered with that part
  ("Lester" of 'Lester Ben "Benny" Binion' for "What is the first name of ...?"); refused, a small model writes
  the whole name again, and excluding it would take out the part, which begins it.
- the person named (a rewrite): a "who" question's answer that opens with a person's possessive and a work ('J. R.
  R. Tolkien's "The Lord of the Rings", following ...') gives the person, not where the possessive is part of a
  name ("McDonald's Corporation").
"""

from __future__ import annotations

from offline_agent.answer_form import part_of_name
from offline_agent.checks.base import Candidate


class NamePartCut:
    """The part of a whole name a question asks for, before the checks weigh the answer."""

    name = "name part"
    before_checks = True

    def rewrite(self, candidate: Candidate) -> tuple[str, str] | None:
        part = candidate.form.name_part
        piece = part_of_name(candidate.answer, part) if part is not None and len(candidate.answer.split()) > 1 else None
        return (f"{part} name", piece) if piece is not None else None


class Owner:
    """The person whose possessive opens a "who" question's answer."""

    name = "person named"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str] | None:
        owner = candidate.form.owner(candidate.answer)
        return (self.name, owner) if owner is not None else None
