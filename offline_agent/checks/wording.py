"""The check of an open question's answer against its own words: an answer that repeats the question is wrong
whatever the run read (the check excludes its answers from later grammars).

- `in_question`: the answer repeats words of the question ("Gator Country" for "What band did the Gator Country
  guitarist come from?"): it names the hop the question starts from, not the answer (`in_question`: a
  long word may differ by one letter, "Muhammad Ali" for "Muhummad Ali"). A name of the kind asked for, as the
  question writes it after which/what, is not refused ("Hawaii County" for "... is in what Hawaii county?").
"""

from __future__ import annotations

import re

from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.checks.kinds import kind_asked
from offline_agent.normalize import normalize_answer
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


def in_question(answer: str, question: str) -> bool:
    """True if `answer`, normalised as HotpotQA does, is a run of whole words of the question (whose dashes and
    slashes may also part words; a long word may differ by a letter, `_near`); not when it is a name that ends in
    the kind of thing the question asks for and is written right after its which/what: "Hawaii County" answers
    "... is in what Hawaii county?" (but "Gator Country" is in "What Gator Country guitarist ...?")."""
    if _names_the_kind_asked(answer.strip(), question):
        return False
    needle = normalize_answer(answer).split()
    # Also with the question's dashes and slashes as spaces: "2014" is in "the 2014–15 season", which normalises
    # to "201415".
    split = re.sub(r"[-‐‑–—/]", " ", question)
    for text in (question, split):
        words = normalize_answer(text).split()
        runs = (words[start : start + len(needle)] for start in range(len(words) - len(needle) + 1))
        if needle and any(all(map(_near, needle, run)) for run in runs):
            return True
    return False


def _near(word: str, other: str) -> bool:
    """Whether two words are the same but for one letter added, left out, changed or swapped with the next, in words
    of six letters or more: a question's typing ("Muhummad Ali", "consitutional") or number ("magazines") does
    not make its words another answer's."""
    if word == other:
        return True
    if min(len(word), len(other)) < 6 or abs(len(word) - len(other)) > 1:
        return False
    short, long = sorted((word, other), key=len)
    if len(short) < len(long):
        return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
    differ = [i for i, (a, b) in enumerate(zip(word, other, strict=True)) if a != b]
    swapped = len(differ) == 2 and differ[1] == differ[0] + 1 and word[differ[0]] == other[differ[1]]
    return len(differ) == 1 or (swapped and word[differ[1]] == other[differ[0]])


def _names_the_kind_asked(answer: str, question: str) -> bool:
    """Whether `answer` is a name (a capital letter in it) whose last word is the kind the question asks for, and the
    question writes it right after which/what ("what Hawaii county?", "what New York city?")."""
    words = answer.split()
    if not words or not re.search(r"[A-Z]", answer) or words[-1].lower() not in kind_asked(question):
        return False
    return re.search(rf"\b(?:which|what)\s+{re.escape(answer)}(?!\w)", question, re.IGNORECASE) is not None
