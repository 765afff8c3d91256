"""What form a question's answer takes, read off the question by rules: yes/no, one of its options, or a span read.

Why: a grounded Final (grounding.py) may be any span of what the run read, and a small model uses that freedom to
answer a comparison with a year it read ("1957" for "Which was founded first, A or B?"), a yes/no question with a
sentence, and a bridge question with the entity the question itself names ("Gator Country" for "What band did the
Gator Country guitarist come from?"). The question says which of three forms its answer has:

- `yes_no`: the question opens with an auxiliary verb ("Are both ...", "Did ...", "Were A and B ..."): the answer
  is `yes` or `no`. When it also offers options ("Is A or B written more for ...?") the options are allowed too.
- `choice`: a which/who question that offers options joined by "or" ("Who was born first, A or B?"): the answer
  is a span of the question, so the model picks one of the options as the question writes it.
- `open`: any other question: the answer is a span of what the searches returned, never of the question alone
  (an open question does not contain its own answer), and never yes/no.

The rules are deliberately narrow and err towards `open`: "or" makes a which/who question a choice only when an
option after it reads as a name (a capital, a digit or a quote, possibly after "the") or the question compares
("first", "older", "more", ...), so "Which company makes cars or trucks in Sweden?" stays open. A question the
rules misread loses only the restriction, since every form still allows what was read for `open` questions.
Limits: English questions only; a question in another language is `open`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from offline_agent.grounding import Grounding

KINDS = ("open", "yes_no", "choice")

_AUXILIARIES = frozenset(
    "is are was were do does did has have had can could will would shall should may might must am".split()
)
_CHOOSERS = frozenset("which who whom whose".split())
# Words that make an "A or B" question a comparison even when its options are written in lower case.
_COMPARING = re.compile(
    r"\b(first|last|earlier|later|older|oldest|younger|youngest|newer|higher|highest|lower|longer|longest|shorter|"
    r"larger|largest|smaller|bigger|biggest|more|less|fewer|most|least|further|farther|closer|taller|tallest|"
    r"heavier|lighter|faster|slower)\b",
    re.IGNORECASE,
)
_OR = re.compile(r"\bor\b\s+(?:the\s+|a\s+|an\s+)?(\S)", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")


@dataclass(frozen=True)
class AnswerForm:
    """The form of one question's answer: its kind, and the question (the source of a choice's options)."""

    kind: str
    question: str
    yes_no: bool

    @property
    def reads_observations(self) -> bool:
        """Whether what the searches return may be the answer (open questions) or only the question's options."""
        return self.kind == "open"

    def grounding(self) -> Grounding:
        """The evidence a Final starts from, before any search: the options of a choice, yes/no, or nothing."""
        texts = [self.question] if self.kind == "choice" else []
        return Grounding(texts, yes_no=self.yes_no)


def answer_form(question: str) -> AnswerForm:
    """The form of `question`'s answer, by the rules of the module docstring."""
    words = [word.lower() for word in _WORD.findall(question)]
    first = words[0] if words else ""
    offers = _offers_options(question)
    if first in _AUXILIARIES:
        return AnswerForm("choice" if offers else "yes_no", question, yes_no=True)
    if first in _CHOOSERS and offers:
        return AnswerForm("choice", question, yes_no=False)
    return AnswerForm("open", question, yes_no=False)


def _offers_options(question: str) -> bool:
    """Whether the question offers options joined by "or" (see the module docstring for the rule)."""
    match = _OR.search(question)
    if match is None:
        return False
    opener = match.group(1)
    return opener[0].isupper() or opener[0].isdigit() or opener[0] in "\"'“‘" or bool(_COMPARING.search(question))


def in_question(answer: str, question: str) -> bool:
    """True if `answer`, normalised as HotpotQA does, is a run of whole words of the question."""
    from offline_agent.eval.metrics import normalize_answer

    needle = normalize_answer(answer)
    return bool(needle) and f" {needle} " in f" {normalize_answer(question)} "


__all__ = ["KINDS", "AnswerForm", "answer_form", "in_question"]
