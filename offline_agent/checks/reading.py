"""Checks of what the run has read: an answer is refused for want of reading, never as wrong in itself, so it may be
written again once the run has read more (these checks do not exclude their answers from later grammars).

- `unread`: under a grounded grammar, the grammar overruled the model's choice at the start of the answer, or where
  the answer ends: what it meant to write ("1961" for a year it never read; "1000" where only "1" was read, so the
  answer "1" would be a strict prefix of what it meant) is in nothing the run has read, and what the grammar let
  through instead is not what it meant. Not where the overruled choice begins an answer the run refused as wrong
  (the grammar took that out, and the model meant it again), nor where it writes a number in another form than
  the text read has: without the thousands separator ("1462" for "1,462"), or in digits for a number word ("3" for
  "three", where its thought writes the number). The Observation says to search for what is missing and shows the
  passages a search for the whole question finds that the run has not read: a model that meant an unread fact
  most often searched with too few of the question's words.
- `one_side`: a yes/no or choice question names documents the run has not read: a comparison judged from one side
  is a guess. The Observation is those documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from offline_agent.checks.base import CLOSED, EVERY_FORM, Candidate, Check, Refusal
from offline_agent.details import Rejection
from offline_agent.grounding import CLAUSE_ENDS
from offline_agent.prompts import prompt_table

FINAL = "Final: "
# A refused token that holds a letter or a digit would have written more of the answer.
_WORDLIKE = re.compile(r"[^\W_]")
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_TEENS = ("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBER_WORDS = (
    {word: value for value, word in enumerate(_UNITS)}
    | {word: 11 + value for value, word in enumerate(_TEENS)}
    | {word: 20 + 10 * value for value, word in enumerate(_TENS)}
)


def _texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "reading")


class Unread(Check):
    name = "unread"
    forms = EVERY_FORM
    excludes = False
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        # A choice's grammar offers its options only, and after a sides or same refusal only the other word is
        # left: an overruled first word there is no unread text. An answer refused before was weighed already.
        judged = bool(candidate.reasons & {"sides", "same"})
        if not candidate.grounded or candidate.earlier or candidate.form.options or judged:
            return None
        excluded = candidate.excluded() if candidate.exclude_refused else []
        rejections = [
            rejection for rejection in candidate.turn.last_rejections if not _begins_any(rejection[1], excluded)
        ]
        if not (refused_first_word(candidate.record.raw, rejections) or cut_short(candidate.record.raw, rejections)):
            return None
        texts = _texts()
        observation = texts["unread"].format(question=candidate.question)
        shown = candidate.open("open_found", candidate.question)
        if shown is not None:
            observation = "\n".join([observation, texts["found"].format(text=shown.text)])
        return Refusal(self.name, observation)


class OneSide(Check):
    name = "one_side"
    forms = CLOSED
    excludes = False

    def refuse(self, candidate: Candidate) -> Refusal | None:
        shown = candidate.open("open_mentioned", candidate.question)
        if shown is None:
            return None
        text = _texts()["one_side"].format(
            titles=" and ".join(shown.titles), text=shown.text, question=candidate.question
        )
        return Refusal(self.name, text)


def refused_first_word(raw: str, rejections: Sequence[Rejection]) -> bool:
    """True if the grammar refused the model's choice at the start of the Final's answer (before the end of its
    first word), and that choice writes something: the answer the model meant is not among what the grammar
    allowed. A refused end of the text or line break is no other answer."""
    span = _answer_span(raw)
    if span is None:
        return False
    answer_start, answer_end = span
    rest = raw[answer_start:answer_end]
    first_word = rest.split()[0] if rest.split() else ""
    thought = _thought(raw)
    # A refused token may begin at the space before the answer (" 1961" after "Final:"). One that writes nothing
    # to see (the end of the text, which decodes to "", or a line break) would have ended the answer, not begun
    # another one.
    return any(
        answer_start - 1 <= offset < answer_start + max(len(first_word), 1)
        and token.strip()
        and not _same_number(rest[: max(offset - answer_start, 0)] + token, first_word, thought)
        for offset, token in rejections
    )


def cut_short(raw: str, rejections: Sequence[Rejection]) -> bool:
    """True if the grammar refused the model's choice where the Final's answer ends, and that choice went on with a
    word or a part of one: the model meant "1000" and the grammar let only "1" through, or "New York City" and it
    let "New York" through. What was written is a strict prefix of what the model meant, and the rest is in nothing
    the run has read (the grammar allows every span read). A refused mark of punctuation ("." or ",") is no more
    of the answer, nor is a copula ("is", "was"): a span ends before one by design (grounding.CLAUSE_ENDS), and the
    model that meant it was running on from the answer into its predicate."""
    span = _answer_span(raw)
    return span is not None and any(
        offset == span[1] and _WORDLIKE.search(token) and token.strip() not in CLAUSE_ENDS
        for offset, token in rejections
    )


def _answer_span(raw: str) -> tuple[int, int] | None:
    """Where the answer of the Final line of `raw` starts and ends (trailing space aside); None where it has none."""
    start = raw.find(FINAL)
    if start < 0:
        return None
    answer_start = start + len(FINAL)
    line_end = raw.find("\n", answer_start)
    line = raw[answer_start:] if line_end < 0 else raw[answer_start:line_end]
    return answer_start, answer_start + len(line.rstrip())


def _thought(raw: str) -> str:
    """The step's Thought line (empty where it has none)."""
    for line in raw.splitlines():
        if line.startswith("Thought:"):
            return line[len("Thought:") :]
    return ""


def _same_number(meant: str, written: str, thought: str = "") -> bool:
    """Whether the model meant the number the grammar made it write, in another form than the text read has: without
    the thousands separators ("1462" for "1,462"), as a number word for digits (" three" for "3"), or in digits for a
    number word ("3" for "three") where the step's thought writes those digits as a number of their own, or the
    number word itself (a first digit alone may begin "30" as well as "3")."""
    digits = meant.strip()
    if "," in written and digits.isdigit() and written.replace(",", "").startswith(digits):
        return True
    worded = _NUMBER_WORDS.get(digits.casefold())
    if worded is not None and written.isdigit():
        return worded == int(written)
    value = _NUMBER_WORDS.get(written.casefold())
    if value is None or not digits.isdigit() or not str(value).startswith(digits):
        return False
    if re.search(rf"(?<![\w-]){re.escape(written.strip())}(?![\w-])", thought, re.IGNORECASE):
        return True  # the thought writes the number word it read: the digits are that number, not one they begin
    return re.search(rf"(?<![\d,.]){value}(?![\d]|[,.]\d)", thought) is not None


def _begins_any(token: str, answers: Sequence[str]) -> bool:
    """Whether the token `token` (the model's refused choice) begins one of `answers`, case aside."""
    piece = token.strip().casefold()
    return bool(piece) and any(answer.strip().casefold().startswith(piece) for answer in answers)
