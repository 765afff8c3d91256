"""Answers that are people's names: a part of one, the person a work names, a name in full (three rewrites).

- the name part (a rewrite before the checks): a whole name that has the part asked is answered with that part
  ("Lester" of 'Lester Ben "Benny" Binion' for "What is the first name of ...?": `name_part`, which reads "first"
  or "given name", "middle", "last", "family name" or "surname" off the question); refused, a small model writes
  the whole name again, and excluding it would take out the part, which begins it.
- the person named (a rewrite): a "who" question's answer that opens with a person's possessive and a work ('J. R.
  R. Tolkien's "The Lord of the Rings", following ...') gives the person, not where the possessive is part of a
  name ("McDonald's Corporation").
- the full name (a rewrite): a person's name whose own entry (the document titled with it, one titled with it
  exactly before one with a qualifier, "Keith Bostic" before "Keith Bostic (American football)") opens with the
  name in full and the person's dates, "Barton Lee Hazlewood (July 9, 1929 - August 4, 2007) was ...", is answered
  with the name as the entry writes it, "Barton Lee Hazlewood" for "Lee Hazlewood", where the run has read it so
  and it holds the answer whole: a middle name inside ("Nelson Aldrich Rockefeller") leaves the name the person
  goes by. A reference answers a person with the name the entry gives them; a name with a part asked is left alone.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import AnswerForm
from offline_agent.checks.base import Candidate, as_words

# An entry's opening name and the parenthesis after it; the dates of a life hold a year, and "born" or a dash.
_OPENING = re.compile(r"\s*([^\W\d_][^(),;:]{2,80}?)\s+\(([^()]{4,80})\)")
_LIFE = re.compile(r"^(?=.*\b(?:1\d{3}|20\d{2})\b)(?=.*(?:\bborn\b|[–—-]))", re.IGNORECASE)
_LINKS = frozenset(["de", "da", "del", "der", "di", "du", "la", "le", "van", "von", "of"])
MAX_NAME_WORDS = 6
_NAME_PART = re.compile(r"\b(first|given|middle|last|family|sur)\s*name\b", re.IGNORECASE)
_PARTS = {"first": "first", "given": "first", "middle": "middle", "last": "last", "family": "last", "sur": "last"}
_NAME_WORDS = re.compile(r"[^\W\d_](?:\.|[\w'’-]*)")  # a word, or an initial with its full stop
_ASKS_WHO = re.compile(r"^\W*(?:who|whom|whose)\b", re.IGNORECASE)
# A name of capitalised words and initials, then a possessive and a quoted title or a common noun: "J. R. R.
# Tolkien's "The Lord of the Rings"", "Tolkien's novel"; not a name that holds one ("McDonald's Corporation").
_POSSESSIVE = re.compile(r"((?:[A-Z][\w.-]*\s+)*[A-Z][\w.-]*)['’]s\s+[\"“'‘a-z]")


class NamePartCut:
    """The part of a whole name a question asks for, before the checks weigh the answer."""

    name = "name part"
    before_checks = True

    def rewrite(self, candidate: Candidate) -> tuple[str, str] | None:
        part = name_part_asked(candidate.form)
        piece = part_of_name(candidate.answer, part) if part is not None and len(candidate.answer.split()) > 1 else None
        return (f"{part} name", piece) if piece is not None else None


class Owner:
    """The person whose possessive opens a "who" question's answer."""

    name = "person named"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str] | None:
        person = owner(candidate.form, candidate.answer)
        return (self.name, person) if person is not None else None


class FullName:
    """A person's name answered as their own entry writes it in full, where the run has read it."""

    name = "full name"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str] | None:
        answer = candidate.answer.strip()
        if name_part_asked(candidate.form) is not None or len(answer.split()) < 2 or candidate.documents is None:
            return None
        text = candidate.documents.document(answer, prefer=lambda title, _text: title == answer)
        full = opening_name(text, answer) if text is not None else None
        if full is None or not candidate.sentences_holding(full):
            return None
        return (self.name, full)


def opening_name(text: str, name: str) -> str | None:
    """The name in full that `text` opens with, followed by a person's dates, where it holds `name` and more
    ("Barton Lee Hazlewood" of "Barton Lee Hazlewood (July 9, 1929 - ...) was ..." for "Lee Hazlewood"); None
    where the text opens otherwise."""
    found = _OPENING.match(text)
    if found is None or not _LIFE.search(found.group(2)):
        return None
    full = found.group(1)
    words = full.split()
    if len(words) > MAX_NAME_WORDS or not all(word[0].isupper() or word in _LINKS for word in words):
        return None
    if words[0] in ("The", "A", "An") or full.casefold() == name.casefold() or not as_words(name).search(full):
        return None
    return full


def name_part_asked(form: AnswerForm) -> str | None:
    """The part of a person's name an open question asks for (`name_part`); None for any other question."""
    return name_part(form.question) if form.kind == "open" else None


def name_part(question: str) -> str | None:
    """The part of a person's name the question asks for: "first" ("What is the first name of ...?", "given
    name"), "middle", or "last" ("last name", "family name", "surname"); None where it asks for no part of one."""
    found = _NAME_PART.search(question)
    return _PARTS[found.group(1).lower()] if found is not None else None


def part_of_name(name: str, part: str) -> str | None:
    """The `part` ("first", "middle", "last") of a person's name as written: its first word, the words between its
    first and last, or its last; a nickname in quotes or brackets is no part ("Lester" of 'Lester Ben "Benny"
    Binion'). None where the name has no such part (a middle name of two words, or one word)."""
    words = _NAME_WORDS.findall(re.sub(r'"[^"]*"|“[^”]*”|\([^)]*\)', " ", name))
    if len(words) < 2:
        return None
    if part == "middle":
        return " ".join(words[1:-1]) or None
    return words[0] if part == "first" else words[-1]


def owner(form: AnswerForm, answer: str) -> str | None:
    """The name before a possessive that opens `answer`, where the question asks who ("J. R. R. Tolkien" of
    'J. R. R. Tolkien's "The Lord of the Rings", following ...' for "Who wrote the book that ...?"): the answer
    named the person's work, not the person. None for any other answer or question."""
    if not _ASKS_WHO.match(form.question):
        return None
    match = _POSSESSIVE.match(answer.strip())
    return match.group(1) if match else None
