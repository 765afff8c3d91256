"""Answers to questions that ask for a date.

- `event` (a check): a date question names the event it dates ("a unit founded in what year?", "When was X born?";
  `event_of`) and no sentence read that holds the answer dates such an event, in its own words or its
  family's ("established" for "founded"), or by a life's span for a birth or death: "1945", the date of a raid, for
  the year a unit was founded. The Observation is the sentence the answer came from. An answer no read sentence
  holds (written across two, or from the question) is left alone.
- the date as written (a rewrite): a bare year that stands as the answer to a question that asks when, not in what
  year (`whole_date`), gives the date the sentences read write in full with that year ("April 1, 1949"
  of "born April 1, 1949"); where they write two dates with it, the year stands.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import AnswerForm, reads_as_year
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table

# A date question that asks for a year, a decade or a century, not for the date itself.
_IN_YEARS = re.compile(r"\b(?:what|which)\s+(?:year|decade|century)\b", re.IGNORECASE)
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
# The event a date question dates: the verb before "in what year" ("founded in what year?"), or the question's last
# word ("When was X born?", "In which year did X die?"), when it is a past participle or a verb of the table below.
_EVENT_BEFORE_YEAR = re.compile(
    r"\b([a-z]+)\s+(?:in|on|during)\s+(?:what|which)\s+(?:year|date|decade|century)\b", re.IGNORECASE
)
_LAST_WORD = re.compile(r"([A-Za-z]+)\W*$")
# Events a sentence may date in other words than the question's ("established in 1941" for "founded"), by the
# stems of the words it uses; a life's span "(3 June 1865 – 20 January 1936)" dates a birth and a death.
_EVENT_FAMILIES = {
    "born": ("born", "birth", "b."),
    "died": ("died", "death", "killed", "executed", "murdered"),
    "founded": ("found", "establish", "form", "creat", "start", "incorporat", "set up", "launch", "open", "organi"),
    "built": ("built", "build", "complet", "construct", "open", "finish", "erect", "inaugurat", "dedicat"),
    "released": ("releas", "publish", "premier", "air", "debut", "launch", "issu", "record", "broadcast", "came out"),
    "disbanded": ("disband", "dissolv", "clos", "end", "abolish", "demolish", "split", "broke up", "defunct", "ceas"),
}
# The question's verbs of each family; any other verb ending in -ed is its own family (`_stem`).
_EVENT_VERBS = {
    "born": ("born",),
    "died": ("die", "died"),
    "founded": ("found", "founded", "establish", "established", "form", "formed", "create", "created", "incorporated")
    + ("start", "started"),
    "built": ("build", "built", "complete", "completed", "construct", "constructed", "open", "opened"),
    "released": ("release", "released", "publish", "published", "premiere", "premiered", "air", "aired", "debut")
    + ("debuted", "launch", "launched", "issued", "recorded", "broadcast"),
    "disbanded": ("disband", "disbanded", "dissolve", "dissolved", "close", "closed", "end", "ended", "abolished")
    + ("demolished",),
}
_EVENTS = {verb: family for family, verbs in _EVENT_VERBS.items() for verb in verbs}


class Event(Check):
    name = "event"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form, answer = candidate.form, candidate.answer
        asked = event_of(form)
        if asked is None:
            return None
        sentences = candidate.sentences_holding(answer)
        if not sentences or any(dates_event(form, sentence, answer) for sentence in sentences):
            return None
        event = "died" if asked == "die" else asked
        text = prompt_table("answer_checks.toml", "dates")["event"].format(
            answer=answer, event=event, sentence=sentences[0], question=form.question
        )
        return Refusal(self.name, text)


class WholeDate:
    """The date written in full for a bare year, where the question asks when."""

    name = "date as written"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        if not (whole_date(candidate.form) and reads_as_year(candidate.answer)):
            return None
        return self.name, written_date(candidate, candidate.form, candidate.answer.strip())


def written_date(candidate: Candidate, form: AnswerForm, year: str) -> str | None:
    """The date that the sentences read which give `year` write in full with it ("April 1, 1949" of "born April 1,
    1949"), among those that date the question's event where any does; None where none does, or they write two."""
    sentences = candidate.sentences_holding(year)
    sentences = [sentence for sentence in sentences if dates_event(form, sentence, year)] or sentences
    dates = {date for sentence in sentences for date in dates_with_year(year, sentence)}
    return dates.pop() if len(dates) == 1 else None


def event_of(form: AnswerForm) -> str | None:
    """The verb of the event an open date question dates ("founded" in "a special forces unit founded in what
    year?", "born" in "When was X born?", "die" in "In which year did X die?"); None where it names none."""
    return _event_asked(form.question) if form.kind == "open" and form.wants == "date" else None


def whole_date(form: AnswerForm) -> bool:
    """Whether the question asks when something was ("When was X born?", "... a civil war that ended when?"),
    not in what year, decade or century: its answer is the date as the documents write it ("April 1, 1949")."""
    return form.wants == "date" and not _IN_YEARS.search(form.question)


def dates_event(form: AnswerForm, sentence: str, answer: str) -> bool:
    """Whether `sentence`, which holds `answer`, dates the event the question asks about (always, when it names
    none): it has a word of the event's family ("established" for "founded"), or another form of the question's
    own verb ("elect" for "elected"); a birth or death may also be dated by a life's span ("(1927–2013)")."""
    event = event_of(form)
    if event is None:
        return True
    family = _EVENTS.get(event)
    stems = _EVENT_FAMILIES[family] if family else (_stem(event),)
    if re.search(r"(?<!\w)(?:" + "|".join(re.escape(stem) for stem in stems) + ")", sentence, re.IGNORECASE):
        return True
    year = re.escape(answer.strip())
    span = {"born": rf"{year}[^()–-]{{0,3}}[–-]", "died": rf"[–-][^()–-]{{0,20}}{year}"}.get(family or "")
    return span is not None and re.search(span, sentence) is not None


def dates_with_year(year: str, sentence: str) -> list[str]:
    """The dates `sentence` writes in full with `year` ("21 March 1963", "April 1, 1949", "October 1922"), in
    order."""
    year = re.escape(year.strip())
    pattern = rf"\b(?:\d{{1,2}}\s+{_MONTH}|{_MONTH}(?:\s+\d{{1,2}},?)?)\s+{year}\b"
    return [found.group(0) for found in re.finditer(pattern, sentence)]


def _event_asked(question: str) -> str | None:
    """The verb of the event a date question dates ("founded" in "... a unit founded in what year?", "born" in "When
    was X born?"): the word before "in what year", else the last word, when it is a verb of _EVENTS or ends in -ed."""
    for match in (_EVENT_BEFORE_YEAR.search(question), _LAST_WORD.search(question)):
        word = match.group(1).lower() if match else ""
        if word in _EVENTS or (word.endswith("ed") and len(word) > 4):
            return word
    return None


def _stem(verb: str) -> str:
    """A crude stem of a past participle, enough to match "elected" with "election" and "married" with "marry"."""
    stem = verb.lower().removesuffix("ed")
    return stem[: max(4, len(stem) - 1)]
