"""Checks of an open question's answer against its own words: an answer that repeats the question, or that names
nothing in particular, is wrong whatever the run read (these checks exclude their answers from later grammars).

- `in_question`: the answer repeats words of the question ("Gator Country" for "What band did the Gator Country
  guitarist come from?"): it names the hop the question starts from, not the answer (answer_form.in_question: a
  long word may differ by one letter, "Muhammad Ali" for "Muhummad Ali"). A name of the kind asked for, as the
  question writes it after which/what, is not refused ("Hawaii County" for "... is in what Hawaii county?").
- `unnamed`: the answer is the definite article and one lower-case word ("The film", "the journal"): it refers to
  a thing without naming it; or a title of office alone ("President") where the question asks who, where, or which
  holder of an office (AnswerForm.names_an_office): it names the office, not whoever held it.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import in_question
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table

# "The film", "the journal": the definite article and one lower-case word refer to a thing without naming it.
_NAMES_NOTHING = re.compile(r"(?:[Tt]he|[Tt]his|[Tt]hat)\s+[a-z][a-z-]*")


def _texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "wording")


class InQuestion(Check):
    name = "in_question"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        if not in_question(candidate.answer, candidate.question):
            return None
        text = _texts()["in_question"].format(answer=candidate.answer, question=candidate.question)
        return Refusal(self.name, text)


class Unnamed(Check):
    name = "unnamed"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        answer = candidate.answer
        if not (_NAMES_NOTHING.fullmatch(answer.strip()) or candidate.form.names_an_office(answer)):
            return None
        return Refusal(self.name, _texts()["unnamed"].format(answer=answer, question=candidate.question))
