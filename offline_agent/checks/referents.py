"""The check of an answer to a question that refers to a thing it does not name: "If autovacuum_vacuum_cost_limit
is left at its default, autovacuum uses another cost-limit setting instead. What is that setting's default value?"
(answer_form.AnswerForm.refers_to: "setting"). The thing the question names is the way to the one it asks about,
and its entry says which one that is ("the regular vacuum_cost_limit value will be used"); a small model answers
with what the named thing's own entry says instead ("-1", its own default).

- `referent`: the question refers to "that NOUN" and the answer was read in a passage whose section the question
  names (an Observation line "[k] Title > ... > ENTRY: text", ENTRY "autovacuum_vacuum_cost_limit (integer)",
  whose name is written in the question as it is in the heading): the answer is said of the named thing, not of
  the one the question asks about. The refusal shows the entry of what that passage refers to: the first of the
  names in code it writes ("vacuum_cost_limit": words joined by underscores, which prose does not write; those of
  the answer's sentence first, none the question writes) that a search for the name and the question's sentence
  that refers ("What is that setting's default value?") finds, as the lines of that search in the name's own
  entry, else those whose place names it ("pg_archivecleanup > Options > -n"), else its first line; never a line
  of an entry the question names. A small model told to search for the name searches again for the thing the
  question names, so the check makes the hop itself; with read_hop the model also answers, from that entry alone,
  the question's sentence asked of the name ("What is vacuum_cost_limit's default value?": `Refusal.hop`). Where
  the passage writes no such name, or no search for one shows anything, the answer stands. A title-only line (an
  encyclopedic record, a page without sections) counts by its title.
"""

from __future__ import annotations

import re

from offline_agent.checks.base import Candidate, Check, Refusal, as_words, sentence_with
from offline_agent.listing import entries, listing
from offline_agent.prompts import prompt_table
from offline_agent.tools.documents import Shown
from offline_agent.tools.titles import bare_title

# A search's LABEL (listing.py) is a title and the section's headings joined by " > ".
_HEADING_PARTS = " > "
# A name in code: letters or digits joined by underscores, and dots ("pg_stat_statements.max"); a function's "()"
# after it is no part of it.
_CODE_NAME = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)*_[A-Za-z0-9]+(?:[_.][A-Za-z0-9]+)*")
MAX_NAMES = 3
MAX_LINES = 2


def _texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "referents")


def shown_lines(observation: str) -> list[tuple[str, str]]:
    """(label, text) of each passage `observation` lists as "[k] LABEL: text" (listing.py)."""
    return [(entry.label, entry.text) for entry in entries(observation) if entry.label is not None]


def entry_names(label: str) -> list[str]:
    """The names of the section a passage's label ends with ("autovacuum_vacuum_cost_limit" and
    "toast.autovacuum_vacuum_cost_limit" of "CREATE TABLE > ... > autovacuum_vacuum_cost_limit,
    toast.autovacuum_vacuum_cost_limit (integer)"): its last heading less a closing qualifier, as a title's
    (titles.bare_title), split at commas."""
    last = bare_title(label.rsplit(_HEADING_PARTS, 1)[-1])
    return [name.strip() for name in last.split(",") if name.strip()]


def written_in(name: str, text: str) -> bool:
    """Whether `text` writes `name` as it is written (case included), not inside a longer name."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def code_names(text: str, first: str = "") -> list[str]:
    """The names in code that `text` writes, those of `first` (a sentence of it) first, each once, in order."""
    names = [*_CODE_NAME.findall(first), *_CODE_NAME.findall(text)]
    return list(dict.fromkeys(name.rstrip(".") for name in names))


def _entry_lines(shown: Shown, name: str, named: list[str]) -> Shown | None:
    """The lines of `shown` (a search for `name`) in no entry of `named`: those of `name`'s own entry, else those whose
    place names it ("auto_explain > Configuration Parameters > auto_explain.log_format (enum)" for "auto_explain"),
    up to MAX_LINES, else the first. Numbered again from 1, with the ids, titles and scores they stand for; None
    where no line is left."""
    lines = zip(shown_lines(shown.text), shown.ids, shown.titles, shown.scores, strict=False)
    rows = [(label, text, *passage) for (label, text), *passage in lines if not set(entry_names(label)) & set(named)]
    own = [row for row in rows if name in entry_names(row[0])]
    kept = (own or [row for row in rows if written_in(name, row[0])] or rows[:1])[:MAX_LINES]
    if not kept:
        return None
    text = listing((label, line) for label, line, *_ in kept)
    return Shown(text, [row[3] for row in kept], [row[2] for row in kept], [row[4] for row in kept])


class Referent(Check):
    name = "referent"

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form = candidate.form
        if form.refers_to is None or candidate.documents is None:
            return None
        question, holds = form.question, as_words(candidate.answer)
        named: list[str] = []
        names: list[str] = []
        for step in candidate.state.trajectory.steps:
            for label, text in shown_lines(step.observation or ""):
                if not holds.search(text):
                    continue
                own = [name for name in entry_names(label) if written_in(name, question)]
                if not own:
                    continue
                named.extend(own)
                names.extend(code_names(text, sentence_with(text, candidate.answer)))
        if not named:
            return None
        named = list(dict.fromkeys(named))
        others = [name for name in dict.fromkeys(names) if name not in named and not written_in(name, question)]
        fields = {"answer": candidate.answer, "named": ", ".join(named), "noun": form.refers_to, "question": question}
        for name in others[:MAX_NAMES]:
            found = candidate.documents.open_found(f"{name} {form.referring_sentence}")
            entry = _entry_lines(found, name, named) if found is not None else None
            if entry is None:
                continue
            text = candidate.host.show(candidate, entry)
            observation = _texts()["referent"].format(name=name, text=text, **fields)
            return Refusal(self.name, observation, hop=(name, text, form.asked_of(name) or question))
        return None
