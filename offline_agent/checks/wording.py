"""The check of an open question's answer against its own words: an answer that repeats the question is wrong
whatever the run read (the check excludes its answers from later grammars).

- `in_question`: the answer repeats words of the question ("Gator Country" for "What band did the Gator Country
  guitarist come from?"): it names the hop the question starts from, not the answer (answer_form.in_question: a
  long word may differ by one letter, "Muhammad Ali" for "Muhummad Ali"). A name of the kind asked for, as the
  question writes it after which/what, is not refused ("Hawaii County" for "... is in what Hawaii county?").
"""

from __future__ import annotations

from offline_agent.answer_form import in_question
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table


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
