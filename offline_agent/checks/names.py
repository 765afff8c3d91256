"""Answers that are people's names, where the question asks for a part of one or for a person.

- `name_part` (a check): a question asks for one part of a person's name ("What is the middle name of the actress
  who ...?", answer_form.name_part) and gets a name with no such part ("Sela Ward" for a middle name), or one word
  that is another part of a name read ("Sela", the first name in "Sela Ward"). The Observation also shows that
  name's own document, which most often writes the name in full, and the part asked where it does ("Sela Ann
  Ward: its middle name is Ann").
- the name part (a rewrite before the checks): a whole name that has the part asked is answered with that part
  ("Lester" of 'Lester Ben "Benny" Binion' for "What is the first name of ...?"); refused, a small model writes
  the whole name again, and excluding it would take out the part, which begins it.
- the person named (a rewrite): a "who" question's answer that opens with a person's possessive and a work ('J. R.
  R. Tolkien's "The Lord of the Rings", following ...') gives the person, not where the possessive is part of a
  name ("McDonald's Corporation").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from offline_agent.answer_form import part_of_name
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table

_CAPITALISED = r"(?:[A-Z]\.|[A-Z][\w'’-]*)"  # a capitalised word, or an initial with its full stop


class NamePart(Check):
    name = "name_part"

    def refuse(self, candidate: Candidate) -> Refusal | None:
        part = candidate.form.name_part
        if part is None:
            return None
        texts = prompt_table("answer_checks.toml", "names")
        answer, question = candidate.answer, candidate.question
        if len(answer.split()) > 1:
            full = answer
            refusal = texts["no_name_part"].format(answer=answer, part=part, question=question)
        else:
            other = _other_part(answer, part, candidate.read_sentences())
            if other is None:
                return None
            full, its = other
            refusal = texts["other_name_part"].format(answer=answer, its=its, full=full, part=part, question=question)
        shown = candidate.open("open_named", full, exclude_seen=False)
        if shown is None:
            return Refusal(self.name, refusal)
        lines = [refusal, prompt_table("answer_checks.toml", "kinds")["document"].format(text=shown.text)]
        longer = _in_full(full, shown.text)
        piece = part_of_name(longer, part) if longer is not None else None
        if longer is not None and piece is not None:
            lines.append(texts["in_full"].format(longer=longer, part=part, piece=piece))
        return Refusal(self.name, "\n".join(lines))


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


def _other_part(answer: str, part: str, sentences: Sequence[str]) -> tuple[str, str] | None:
    """The first name of two or more capitalised words in `sentences` that has `answer` as a part other than the
    one asked (`part`), and which part it is there: ("Sela Ward", "first") for "Sela" and a middle name."""
    word = re.escape(answer.strip())
    names = re.compile(rf"(?:{_CAPITALISED}\s+)*(?<![\w.'’-]){word}(?![\w'’-])(?:\s+{_CAPITALISED})*")
    for sentence in sentences:
        for found in names.finditer(sentence):
            name = found.group(0)
            for its in ("first", "middle", "last"):
                if its != part and part_of_name(name, its) == answer.strip():
                    return name, its
    return None


def _in_full(name: str, text: str) -> str | None:
    """The first name in `text` that writes `name` with more words between its first and last ("Sela Ann Ward" for
    "Sela Ward"), or None."""
    words = name.split()
    for found in re.finditer(rf"{_CAPITALISED}(?:\s+{_CAPITALISED})+", text):
        longer = found.group(0).split()
        if len(longer) > len(words) and longer[0] == words[0] and longer[-1] == words[-1]:
            return found.group(0)
    return None
