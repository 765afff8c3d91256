"""The check of an answer to a question that refers to a thing it does not name: "If autovacuum_vacuum_cost_limit
is left at its default, autovacuum uses another cost-limit setting instead. What is that setting's default value?"
(`refers_to`: "setting"). The thing the question names is the way to the one it asks about,
and its entry says which one that is ("the regular vacuum_cost_limit value will be used"); a small model answers
with what the named thing's own entry says instead ("-1", its own default).

- `referent`: the question refers to "that NOUN" and the answer was read in a passage whose section the question
  names (an Observation line "[k] Title > ... > ENTRY: text", ENTRY "autovacuum_vacuum_cost_limit (integer)",
  whose name is written in the question as it is in the heading): the answer is said of the named thing, not of
  the one the question asks about. The refusal shows the entry of what that passage refers to: the first of the
  names in code it writes ("vacuum_cost_limit": words joined by underscores, which prose does not write; those of
  the answer's sentence first, none the question writes) that a search for the name and the question's sentence
  that refers ("What is that setting's default value?") finds, as the lines of that search in the name's own
  entry or in a place that names it ("pg_archivecleanup > Options > -n"), else such lines of a search for the
  name alone; else the lines of either that write the name (a name a manual documents in a table:
  pg_create_restore_point); else the first line the name alone finds. Never a line of an entry the question
  names. A small model told to search for the name searches again for the thing the question names, so the check
  makes the hop itself; with read_hop the model also answers, from that entry alone, the question's sentence asked
  of the name ("What is vacuum_cost_limit's default value?": `Refusal.hop`). Where the passage writes no such
  name, or no search for one shows anything, the answer stands. A title-only line (an encyclopedic record, a page
  without sections) counts by its title.

- `referred`: the same question, where no entry the question names holds the answer ("Logical replication workers
  are taken from a pool that another server parameter defines. What is that parameter's default?" answered "4",
  read in max_logical_replication_workers' own entry). The way is the sentence read that says most of what the
  question's other sentences say (at least MIN_SHARED of their words, a passage's entry name counted with each of
  its sentences): "Logical replication workers are taken from the pool defined by max_worker_processes." The names
  in code it writes, less the question's and its own entry's, are what the question may refer to. The answer
  stands where it was read of one of them: in a passage whose place writes the name, in a sentence that writes
  most of its words ("The default target value is 100." for default_statistics_target) or the name itself (and
  is not another copy of the way), or in the entry of a thing the way sentence writes ("scram-sha-256").
  Otherwise it is refused as `referent` refuses, showing the entry of the first name; the refusal is not sure the
  answer is wrong (the way sentence is a guess), so the answer is not excluded from later grammars.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import AnswerForm
from offline_agent.checks.base import Candidate, Check, Refusal, as_words, sentence_with
from offline_agent.checks.kinds import singular
from offline_agent.listing import entries, listing
from offline_agent.prompts import prompt_table
from offline_agent.retrieval.analyzer import ENGLISH_STOPWORDS
from offline_agent.retrieval.sentences import split_sentences
from offline_agent.tools.documents import DocumentSource, Shown
from offline_agent.tools.titles import bare_title

# A search's LABEL (listing.py) is a title and the section's headings joined by " > ".
_HEADING_PARTS = " > "
# A name in code: letters or digits joined by underscores, and dots ("pg_stat_statements.max"); a function's "()"
# after it is no part of it.
_CODE_NAME = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)*_[A-Za-z0-9]+(?:[_.][A-Za-z0-9]+)*")
MAX_NAMES = 3
MAX_LINES = 2
# The words of the question's other sentences a sentence read must also say to be the way to the thing it refers to.
MIN_SHARED = 3
# A word, or a name in code with its dots and underscores ("pg_stat_statements.max").
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)*")
# "... uses another cost-limit setting. What is that setting's default?": "that" after a verb or a preposition
# points back to a thing the question described and did not name (after a noun it opens a clause: "the band that").
_REFERS_TO = re.compile(
    r"\b(?:is|was|are|were|does|do|did|makes?|uses?|has|have|of|in|on|for|from|by|with|to|at)\s+that\s+"
    r"(?:other\s+)?(?!(?:the|a|an|it|is|was|are|were|one)\b)([a-z][a-z-]*)\b",
    re.IGNORECASE,
)


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


def content_words(text: str) -> set[str]:
    """The words of `text` that carry its content: lower-cased, in the singular, less English function words and
    words of one or two letters; a name in code is one word, as written."""
    words = (word.lower() for word in _WORD.findall(text))
    kept = (word for word in words if len(word) > 2 and word not in ENGLISH_STOPWORDS)
    return {word if re.search(r"[_.]", word) else singular(word) for word in kept}


def way_sentence(lines: list[tuple[str, str]], way: str) -> tuple[str, str] | None:
    """(the label, the sentence) of the passage sentence in `lines` that says most of the words of `way` (the
    question less the sentence that refers), at least MIN_SHARED, the passage's entry names counted with each of its
    sentences; the first of equals. None where no sentence says that many."""
    wanted = content_words(way)
    best: tuple[int, str, str] | None = None
    for label, text in lines:
        entry = " ".join(entry_names(label))
        for start, end in split_sentences(text):
            shared = len(wanted & content_words(f"{entry} {text[start:end]}"))
            if shared >= MIN_SHARED and (best is None or shared > best[0]):
                best = (shared, label, text[start:end])
    return (best[1], best[2]) if best is not None else None


def _named_holding(candidate: Candidate, lines: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The entries the question names whose passages hold the answer, and the names in code those passages write
    (those of the answer's sentence first)."""
    holds = as_words(candidate.answer)
    named: list[str] = []
    names: list[str] = []
    for label, text in lines:
        if not holds.search(text):
            continue
        own = [name for name in entry_names(label) if written_in(name, candidate.question)]
        if own:
            named.extend(own)
            names.extend(code_names(text, sentence_with(text, candidate.answer)))
    return list(dict.fromkeys(named)), names


def _lines_read(candidate: Candidate) -> list[tuple[str, str]]:
    return [line for step in candidate.state.trajectory.steps for line in shown_lines(step.observation or "")]


# What a line of a search for a name may be, in the order they are taken: a line of the name's own entry or of a
# place that names it ("auto_explain > Configuration Parameters > auto_explain.log_format (enum)" for
# "auto_explain"); else one whose text writes it; else the first line found.
_LINE_TIERS = (("own", "placed"), ("writing",), ("first",))


def _entry_lines(shown: Shown, name: str, named: list[str], tiers: tuple[str, ...]) -> Shown | None:
    """The lines of `shown` (a search for `name`) in no entry of `named` and of the first of `tiers` that has any,
    up to MAX_LINES, numbered again from 1, with the ids, titles and scores they stand for; None where none has."""
    lines = zip(shown_lines(shown.text), shown.ids, shown.titles, shown.scores, strict=False)
    rows = [(label, text, *passage) for (label, text), *passage in lines if not set(entry_names(label)) & set(named)]
    of_tier = {
        "own": [row for row in rows if name in entry_names(row[0])],
        "placed": [row for row in rows if written_in(name, row[0])],
        "writing": [row for row in rows if written_in(name, row[1])],
        "first": rows[:1],
    }
    kept = next((of_tier[tier] for tier in tiers if of_tier[tier]), [])[:MAX_LINES]
    if not kept:
        return None
    text = listing((label, line) for label, line, *_ in kept)
    return Shown(text, [row[3] for row in kept], [row[2] for row in kept], [row[4] for row in kept])


def _entry_of(documents: DocumentSource, name: str, referring: str, named: list[str]) -> Shown | None:
    """The lines about `name` (_LINE_TIERS) that a search for the name and the question's referring sentence finds,
    else a search for the name alone, tier by tier; of the first lines, the second's. The sentence finds the entry's
    line about what is asked, where it finds the entry; the name alone finds an entry the sentence's words
    outweigh, or a name a manual writes only in a table or in prose."""
    searches = [documents.open_found(f"{name} {referring}"), documents.open_found(name)]
    found = [shown for shown in searches if shown is not None]
    for tiers in _LINE_TIERS:
        for shown in reversed(found) if tiers == ("first",) else found:
            entry = _entry_lines(shown, name, named, tiers)
            if entry is not None:
                return entry
    return None


def _show_referred(
    candidate: Candidate, reason: str, names: list[str], named: list[str], template: str, fields: dict[str, str]
) -> Refusal | None:
    """The refusal that shows the entry of the first of `names` (up to MAX_NAMES, none the question or `named`
    writes) whose lines `_entry_of` finds; None where none is found."""
    form, question = candidate.form, candidate.question
    assert candidate.documents is not None and refers_to(form) is not None
    others = [name for name in dict.fromkeys(names) if name not in named and not written_in(name, question)]
    for name in others[:MAX_NAMES]:
        entry = _entry_of(candidate.documents, name, referring_sentence(form) or "", named)
        if entry is None:
            continue
        text = candidate.host.show(candidate, entry)
        observation = _texts()[template].format(
            name=name, text=text, answer=candidate.answer, noun=refers_to(form), question=question, **fields
        )
        return Refusal(reason, observation, hop=(name, text, asked_of(form, name) or question))
    return None


class Referent(Check):
    name = "referent"

    def refuse(self, candidate: Candidate) -> Refusal | None:
        if refers_to(candidate.form) is None or candidate.documents is None:
            return None
        named, names = _named_holding(candidate, _lines_read(candidate))
        if not named:
            return None
        return _show_referred(candidate, self.name, names, named, "referent", {"named": ", ".join(named)})


class Referred(Check):
    name = "referred"
    excludes = False

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form = candidate.form
        if refers_to(form) is None or candidate.documents is None:
            return None
        lines = _lines_read(candidate)
        if _named_holding(candidate, lines)[0]:
            return None
        way = form.question.replace(referring_sentence(form) or "", " ")
        found = way_sentence(lines, way)
        if found is None:
            return None
        label, sentence = found
        named = entry_names(label)
        names = [name for name in code_names(sentence) if name not in named and not written_in(name, form.question)]
        if not names or _read_of(candidate, lines, names, named, sentence, way):
            return None
        return _show_referred(candidate, self.name, names, named, "referred", {"sentence": sentence})


def _read_of(
    candidate: Candidate, lines: list[tuple[str, str]], names: list[str], own: list[str], sentence: str, way: str
) -> bool:
    """Whether the answer was read of one of `names` (what the way `sentence`, of the entry `own`, refers to): in a
    passage whose place writes one; in the entry of another thing `sentence` writes; or in a sentence that writes
    most of the words of one, or writes one and is no other way sentence (it says fewer than MIN_SHARED of the
    words of `way`: "... so make sure your max_connections setting is high enough" is the way, not what it is)."""
    holds, wanted = as_words(candidate.answer), content_words(way)
    for label, text in lines:
        if not holds.search(text):
            continue
        if any(written_in(name, label) for name in names):
            return True
        if any(entry not in own and written_in(entry, sentence) for entry in entry_names(label)):
            return True
        for start, end in split_sentences(text):
            said = text[start:end]
            if not holds.search(said):
                continue
            words = content_words(said)
            another_way = len(wanted & words) >= MIN_SHARED
            if any((written_in(name, said) and not another_way) or _most_words(name, words) for name in names):
                return True
    return False


def _most_words(name: str, words: set[str]) -> bool:
    """Whether `words` hold at least two of the words of a name in code, and at least half of them."""
    parts = {singular(part.lower()) for part in re.split(r"[_.]", name) if len(part) > 2}
    shared = len(parts & words)
    return shared >= 2 and 2 * shared >= len(parts)


def refers_to(form: AnswerForm) -> str | None:
    """The noun of "that NOUN" in an open question, after a verb or a preposition ("setting" in "What is that
    setting's default?"): a thing the question described before and does not name; None where there is none."""
    refers = _REFERS_TO.search(form.question) if form.kind == "open" else None
    return refers.group(1).lower() if refers is not None else None


def referring_sentence(form: AnswerForm) -> str | None:
    """The sentence of the question that refers to "that NOUN" (`refers_to`), which says what it asks about the
    thing ("What is that setting's default value?"); None where the question refers to nothing it does not name."""
    if refers_to(form) is None:
        return None
    sentences = re.split(r"(?<=[.?!])\s+", form.question.strip())
    return next((sentence for sentence in sentences if _REFERS_TO.search(sentence)), form.question)


def asked_of(form: AnswerForm, name: str) -> str | None:
    """The question's sentence that refers to "that NOUN" asked of `name` ("What is vacuum_cost_limit's default
    value?" of "What is that setting's default value?"); None where the question refers to nothing."""
    sentence = referring_sentence(form)
    noun = refers_to(form)
    if sentence is None or noun is None:
        return None
    that = rf"\bthat\s+(?:other\s+)?{re.escape(noun)}\b"
    return re.sub(that, lambda _: name, sentence, count=1, flags=re.IGNORECASE)
