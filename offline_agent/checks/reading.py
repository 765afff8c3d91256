"""Checks of what the run has read: an answer is refused for want of reading, never as wrong in itself, so it may be
written again once the run has read more (these checks do not exclude their answers from later grammars).

- `unread`: under a grounded grammar, the grammar overruled the model's choice at the start of the answer: what it
  meant to write ("1961" for a year it never read) is in nothing the run has read, and what the grammar let through
  instead is not what it meant. Not where the overruled choice begins an answer the run refused as wrong (the
  grammar took that out, and the model meant it again), nor where it writes a number without the thousands
  separator the text read has ("1462" for "1,462"). The Observation says to search for what is missing and shows
  the passages a search for the whole question finds that the run has not read: a model that meant an unread fact
  most often searched with too few of the question's words.
- `one_side`: a yes/no or choice question names documents the run has not read: a comparison judged from one side
  is a guess. The Observation is those documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from offline_agent.checks.base import CLOSED, EVERY_FORM, Candidate, Check, Refusal
from offline_agent.details import Rejection
from offline_agent.prompts import prompt_table

FINAL = "Final: "


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
        if not refused_first_word(candidate.record.raw, rejections):
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
    first word): the answer the model meant is not among what the grammar allowed."""
    start = raw.find(FINAL)
    if start < 0:
        return False
    answer_start = start + len(FINAL)
    rest = raw[answer_start:]
    first_word = rest.split()[0] if rest.split() else ""
    # A refused token may begin at the space before the answer (" 1961" after "Final:").
    return any(
        answer_start - 1 <= offset < answer_start + max(len(first_word), 1)
        and not _same_number(rest[: max(offset - answer_start, 0)] + token, first_word)
        for offset, token in rejections
    )


def _same_number(meant: str, written: str) -> bool:
    """Whether the model meant the number the grammar made it write, but without the thousands separators the
    text read has: "1462" for "1,462"."""
    digits = meant.strip()
    return "," in written and digits.isdigit() and written.replace(",", "").startswith(digits)


def _begins_any(token: str, answers: Sequence[str]) -> bool:
    """Whether the token `token` (the model's refused choice) begins one of `answers`, case aside."""
    piece = token.strip().casefold()
    return bool(piece) and any(answer.strip().casefold().startswith(piece) for answer in answers)
