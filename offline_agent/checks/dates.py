"""Answers to questions that ask for a date.

- `event` (a check): a date question names the event it dates ("a unit founded in what year?", "When was X born?";
  AnswerForm.event) and no sentence read that holds the answer dates such an event, in its own words or its
  family's ("established" for "founded"), or by a life's span for a birth or death: "1945", the date of a raid, for
  the year a unit was founded. The Observation is the sentence the answer came from. An answer no read sentence
  holds (written across two, or from the question) is left alone.
- the date as written (a rewrite): a bare year that stands as the answer to a question that asks when, not in what
  year (AnswerForm.whole_date), gives the date the sentences read write in full with that year ("April 1, 1949"
  of "born April 1, 1949"); where they write two dates with it, the year stands.
"""

from __future__ import annotations

from offline_agent.answer_form import AnswerForm, dates_with_year, reads_as_year
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table


class Event(Check):
    name = "event"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form, answer = candidate.form, candidate.answer
        if form.event is None:
            return None
        sentences = candidate.sentences_holding(answer)
        if not sentences or any(form.dates_event(sentence, answer) for sentence in sentences):
            return None
        event = "died" if form.event == "die" else form.event
        text = prompt_table("answer_checks.toml", "dates")["event"].format(
            answer=answer, event=event, sentence=sentences[0], question=form.question
        )
        return Refusal(self.name, text)


class WholeDate:
    """The date written in full for a bare year, where the question asks when."""

    name = "date as written"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        if not (candidate.form.whole_date and reads_as_year(candidate.answer)):
            return None
        return self.name, written_date(candidate, candidate.form, candidate.answer.strip())


def written_date(candidate: Candidate, form: AnswerForm, year: str) -> str | None:
    """The date that the sentences read which give `year` write in full with it ("April 1, 1949" of "born April 1,
    1949"), among those that date the question's event where any does; None where none does, or they write two."""
    sentences = candidate.sentences_holding(year)
    sentences = [sentence for sentence in sentences if form.dates_event(sentence, year)] or sentences
    dates = {date for sentence in sentences for date in dates_with_year(year, sentence)}
    return dates.pop() if len(dates) == 1 else None
