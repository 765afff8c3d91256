"""Checks of an open question's answer against the kind of thing the question asks for (answer_form.AnswerForm):
a number or a date, or a "which/what NOUN". The answer's own document (the document titled with it), when there is
one, says what the answer is; an answer of another kind is most often the entity on the way to the answer, so
several of these refusals also show that document (`Refusal.show_document`).

- `kind`: the question asks for a year, a date or a number and the answer is none ("Kansas" for "a population of how
  many inhabitants?"), or asks for a number and gets a year ("1959" for "How many copies ... sold?": English writes
  a count of a thousand or more with a comma), unless a sentence read writes it as a count of what the question
  names ("1024 bytes" for "How many bytes ...?": a manual writes no comma), or a date and gets a bare number of one
  to three digits ("17"). A name that titles a document ("Carrefour" for "... a chain that operated how many
  hypermarkets?") also shows its document. Any other bare number may be the thing itself in a manual's terms (an
  exit status 2, permissions 0640, a release 14), so it stands.
- `asks_for`: a "which/what NOUN" question ("Which river flows through the birth city of James Joyce?") answered
  with a document whose first sentence does not say it is one ("Dublin": "Dublin is the capital and largest city
  of Ireland"). Only what the sentence says its subject is counts, not the names of what it is in.
- `described`: the question describes an entity on the way ("the company that Sachin Warrier worked for") and the
  answer's document says it is one ("Tata Consultancy Services ... is an Indian multinational ... company"): the
  model named the hop, not what the question asks about it.

And one rewrite: the answer to a "what type / kind / sort of NOUN" question that a sentence read writes before the
noun gets the noun ("fictional character" of "a fictional character" for "fictional"), as answers to such questions
name the kind with its noun.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import reads_as_year
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table
from offline_agent.retrieval.sentences import first_sentence

_LETTER = re.compile(r"[^\W\d_]")


def texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "kinds")


def _definition(candidate: Candidate) -> str | None:
    """The first sentence of the answer's own document, which says what it is; None without one."""
    own = candidate.own_document()
    return (first_sentence(own) or None) if own is not None else None


class Kind(Check):
    name = "kind"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form, answer = candidate.form, candidate.answer
        if form.fits(answer) or any(form.counted_in(answer, s) for s in candidate.sentences_holding(answer)):
            return None
        assert form.wants is not None
        template = texts()["kind_year" if reads_as_year(answer) else "kind"]
        observation = template.format(wants=texts()["wants"][form.wants], answer=answer, question=form.question)
        shows = bool(_LETTER.search(answer)) and candidate.own_document() is not None
        return Refusal(self.name, observation, show_document=shows)


class AsksFor(Check):
    name = "asks_for"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form = candidate.form
        sentence = _definition(candidate) if form.asks_for else None
        if sentence is None or form.describes(sentence):
            return None
        text = texts()["asks_for"].format(
            kind=" ".join(form.asks_for), answer=candidate.answer, definition=sentence, question=form.question
        )
        return Refusal(self.name, text, show_document=True)


class Described(Check):
    name = "described"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form = candidate.form
        sentence = _definition(candidate) if form.described else None
        kind = form.description_in(sentence) if sentence is not None else None
        if kind is None or form.predicate_describes(sentence or ""):
            return None
        text = texts()["described"].format(
            answer=candidate.answer, kind=kind, definition=sentence, question=form.question
        )
        return Refusal(self.name, text, show_document=True)


class TypeNoun:
    """The rewrite of a "what type of NOUN" answer with its noun, as a sentence read writes the two."""

    name = "kind as written"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        form = candidate.form
        if form.type_of is None:
            return None
        found = (
            form.with_noun(candidate.answer, sentence) for sentence in candidate.sentences_holding(candidate.answer)
        )
        return self.name, next((extended for extended in found if extended is not None), None)
