"""Checks of answers to questions about two things, weighed against each thing's own document.

Read together after a page of other passages, a small model mixes two documents up and leans to "yes"; judged one
document at a time, it does not. So these checks find each side's document (the first document its part of the
question names, DocumentSource.named_document) and weigh the answer against what each says alone.

- `compare`: "Which is higher, A or B?", "Who was born first, A or B?" (compare.py) answered with the option whose
  number loses, by the numbers the two documents give (a year, a length, or a count the question names: "atomic
  number 80"). The Observation is both numbers, their sentences and which is larger. On a step no check sees (the
  last), the losing option is taken out of the grammar instead (`decided`).
- `sides`: a yes/no question asks one thing of two ("Are both A and B based in Massachusetts?"), and the answer
  disagrees with the model's own yes or no on each side's document alone (two one-word calls): "yes" only if both
  are. The same for a choice that compares nothing ("Which writer was from England, A or B?") where the model says
  yes of exactly one option.
- `same`: "Were A and B born in the same year?" answered against the years the two documents give; any other "same
  X" question against X as the model reads it off each document alone (one call a side, under a grammar of that
  document's spans), and its "same" or "different" on the two: asked yes or no of two short answers instead, a
  small model said yes to nearly every pair.
- `shared`: "What occupation do A and B share?", "Where are A and B located?" answered with words one of the two
  documents does not hold (as whole words, in its first passage). The Observation is both first sentences.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from offline_agent.answer_form import choice_options, compares
from offline_agent.checks.base import CLOSED, OPEN, Candidate, Check, Refusal, as_words, capitalised, sentence_with
from offline_agent.checks.kinds import kind_asked, names_kind
from offline_agent.compare import Comparison, Measure, comparison, measure, paired_subjects, same_year, winner
from offline_agent.listing import listing
from offline_agent.normalize import normalize_answer
from offline_agent.parse import WordParser
from offline_agent.prompts import prompt_table
from offline_agent.retrieval.sentences import first_sentence
from offline_agent.tools.documents import DocumentSource
from offline_agent.tools.titles import bare_title

Named = tuple[str, str]  # a document a question names: (title, head)
YES_OR_NO = WordParser(("yes", "no"))
SAME_OR_DIFFERENT = WordParser(("same", "different"))


def _texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "pairs")


class _Weighing(Check):
    """A check that weighs a yes/no or choice answer against the documents."""

    forms = CLOSED
    weighs = True


class Compare(_Weighing):
    name = "compare"

    def refuse(self, candidate: Candidate) -> Refusal | None:
        question, answer = candidate.question, candidate.answer
        how = comparison(question)
        if how is None or candidate.documents is None:
            return None
        chosen = [i for i, option in enumerate(how.options) if normalize_answer(option) == normalize_answer(answer)]
        found = measured(question, candidate.documents) if chosen else None
        if found is None or found[3] == chosen[0]:
            return None
        how, first_measure, second_measure, _ = found
        shown = [shown_number(how, first_measure.value), shown_number(how, second_measure.value)]
        low, high = shown if first_measure.value < second_measure.value else shown[::-1]
        order = f"{low} is earlier than {high}" if how.dimension == "time" else f"{high} is more than {low}"
        first, second = how.options
        text = _texts()["compare"].format(
            first=first,
            first_value=shown[0],
            first_text=first_measure.text.rstrip("."),
            second=second,
            second_value=shown[1],
            second_text=second_measure.text.rstrip("."),
            order=order,
            question=question,
        )
        return Refusal(self.name, text)


class _PairCheck(_Weighing):
    """A check that weighs a yes/no or choice answer about two things against each thing's own document; `same`
    says which pairs it weighs (those of a "same" question, or the others)."""

    same = False

    def refuse(self, candidate: Candidate) -> Refusal | None:
        sides = _sides_of(candidate)
        if sides is None or (sides[0] == "same") != self.same:
            return None
        _, given, options, documents = sides
        return self.weigh(candidate, given, options, documents)

    def weigh(
        self, candidate: Candidate, given: str, options: tuple[str, str] | None, documents: tuple[Named, Named]
    ) -> Refusal | None:
        raise NotImplementedError


class Sides(_PairCheck):
    name = "sides"

    def weigh(
        self, candidate: Candidate, given: str, options: tuple[str, str] | None, documents: tuple[Named, Named]
    ) -> Refusal | None:
        checked: dict[str, str] = {}
        for title, text in documents:
            user = _texts()["sides_user"].format(
                title=title, text=text, question=candidate.question, name=bare_title(title)
            )
            word = candidate.host.word(candidate, _texts()["sides_system"], user, YES_OR_NO)
            if word is None:
                return None
            checked[title] = word
        candidate.details.checked = checked
        verdicts = [checked[title] for title, _ in documents]
        if options is None:
            verdict = "yes" if verdicts == ["yes", "yes"] else "no"
        elif verdicts.count("yes") == 1:  # a choice: the one option the question holds of
            verdict = options[verdicts.index("yes")]
        else:
            return None
        if normalize_answer(verdict) == given:
            return None
        lines = [
            f"{bare_title(title)}: {checked[title]} ({first_sentence(text).rstrip('.')})" for title, text in documents
        ]
        text = _texts()["sides"].format(checks="; ".join(lines), verdict=verdict, question=candidate.question)
        return Refusal(self.name, text)


class Same(_PairCheck):
    name = "same"
    same = True

    def weigh(
        self, candidate: Candidate, given: str, options: tuple[str, str] | None, documents: tuple[Named, Named]
    ) -> Refusal | None:
        how = same_year(candidate.question)
        if how is None:
            return self._values(candidate, given, documents)
        first, second = (measure(text, how) for _, text in documents)
        if first is None or second is None:
            return None
        candidate.details.checked = {
            documents[0][0]: shown_number(how, first.value),
            documents[1][0]: shown_number(how, second.value),
        }
        verdict = "yes" if first.value == second.value else "no"
        if verdict == given:
            return None
        text = _texts()["same"].format(
            first=bare_title(documents[0][0]),
            first_value=shown_number(how, first.value),
            first_text=first.text.rstrip("."),
            second=bare_title(documents[1][0]),
            second_value=shown_number(how, second.value),
            second_text=second.text.rstrip("."),
            order="The same year" if verdict == "yes" else "Different years",
            verdict=verdict,
            question=candidate.question,
        )
        return Refusal(self.name, text)

    def _values(self, candidate: Candidate, given: str, documents: Sequence[Named]) -> Refusal | None:
        """Any other "same X": X as each document alone gives it, then whether the two are the same X (equal as
        answers, or the model's "same" or "different" on the two)."""
        texts = _texts()
        asked = same_what(candidate.question)
        if asked is None:
            return None
        found: list[tuple[str, str, str]] = []  # (name, value, the sentence it is in)
        for title, text in documents:
            name = bare_title(title)
            user = texts["same_user"].format(title=title, text=text, question=candidate.question, what=asked, name=name)
            value = candidate.host.read_off(candidate, text, texts["same_system"], user)
            if not value:
                return None
            found.append((name, value, sentence_with(text, value)))
        (first, first_value, first_text), (second, second_value, second_text) = found
        candidate.details.checked = {documents[0][0]: first_value, documents[1][0]: second_value}
        if normalize_answer(first_value) == normalize_answer(second_value):
            verdict = "yes"
        else:
            user = texts["same_judge_user"].format(
                what=asked, first=first, first_value=first_value, second=second, second_value=second_value
            )
            word = candidate.host.word(candidate, texts["same_judge_system"], user, SAME_OR_DIFFERENT)
            if word is None:
                return None
            verdict = "yes" if word == "same" else "no"
        if verdict == given:
            return None
        text = texts["same_values"].format(
            first=first,
            first_value=first_value,
            first_text=first_text.strip().rstrip("."),
            second=second,
            second_value=second_value,
            second_text=second_text.strip().rstrip("."),
            order=f"The same {asked}" if verdict == "yes" else f"Not the same {asked}",
            verdict=verdict,
            question=candidate.question,
        )
        return Refusal(self.name, text)


class Shared(Check):
    name = "shared"
    forms = OPEN

    def refuse(self, candidate: Candidate) -> Refusal | None:
        pair = shared_subjects(candidate.question)
        source = candidate.documents
        if pair is None or source is None:
            return None
        found = two_documents(candidate, source, pair)
        if found is None:
            return None
        holds = as_words(candidate.answer)
        texts = {
            title: source.document(bare_title(title), prefer=lambda t, _, title=title: t == title) or head
            for title, head in found
        }
        checked = {title: "yes" if holds.search(text) else "no" for title, text in texts.items()}
        candidate.details.checked = checked
        missing = [bare_title(title) for title, verdict in checked.items() if verdict == "no"]
        if not missing:
            return None
        where = "in neither document" if len(missing) == 2 else f"not in the document of {missing[0]}"
        listed = listing((title, first_sentence(text)) for title, text in texts.items())
        candidate.host.read(candidate, listed)
        first, second = (bare_title(title) for title, _ in found)
        sides = {"first": first, "second": second, "documents": listed}
        text = _texts()["shared"].format(answer=candidate.answer, where=where, question=candidate.question, **sides)
        return Refusal(self.name, text)


def decided(question: str, documents: DocumentSource | None) -> tuple[str, dict[str, str]] | None:
    """The option a comparing question's numbers rule out (the loser) and the numbers read, by option; None where
    the question compares nothing measurable or the numbers are not found. A step no check sees may not write it."""
    found = measured(question, documents) if documents is not None else None
    if found is None:
        return None
    how, first, second, best = found
    checked = {how.options[0]: shown_number(how, first.value), how.options[1]: shown_number(how, second.value)}
    return how.options[1 - best], checked


def measured(question: str, documents: DocumentSource) -> tuple[Comparison, Measure, Measure, int] | None:
    """A comparing question's comparison, the numbers its two options' documents give (compare.py) and the index
    of the option whose number wins; None where the question compares nothing measurable, a number is not found,
    or the two tie."""
    how = comparison(question)
    if how is None:
        return None
    kinds = kind_asked(question)  # "Which movie ...": of two documents named "The Guest", the film's
    prefer = (lambda title, text: names_kind(f"{title} {first_sentence(text)}", kinds)) if kinds else None
    # An option the question writes in lower case ("gold or mercury") titles its document with a capital.
    texts = [
        documents.document(option, prefer=prefer) or documents.document(capitalised(option), prefer=prefer)
        for option in how.options
    ]
    first, second = (measure(text, how) if text is not None else None for text in texts)
    if first is None or second is None:
        return None
    best = winner(how, first, second)
    return None if best is None else (how, first, second, best)


def shown_number(how: Comparison, value: float) -> str:
    """A measured number as the refusal shows it: a year as written, a length in metres, a count with its commas."""
    if how.dimension == "time":
        return f"{value:.0f}"
    number = f"{value:,.0f}" if value.is_integer() else f"{value:,}"
    return f"{number} metres" if how.dimension == "size" else number


def two_documents(candidate: Candidate, source: DocumentSource, parts: Sequence[str]) -> tuple[Named, Named] | None:
    """The first document each of a question's two parts names (preferring those the run has read); None when a
    part names none or both name the same one."""
    seen = candidate.seen_titles()
    first, second = (source.named_document(part, prefer=seen) for part in parts)
    if first is None or second is None or first[0] == second[0]:
        return None
    return first, second


def _sides_of(candidate: Candidate) -> tuple[str, str, tuple[str, str] | None, tuple[Named, Named]] | None:
    """What sides and same weigh: (the pair's kind, the answer normalised, a choice's options or None, the two
    documents); None where the question is about no two things, the answer is none of its options, or a side
    names no document."""
    question = candidate.question
    given = normalize_answer(candidate.answer)
    pair = paired_subjects(question)
    options = choice_options(question) if pair is None and not compares(question) else None
    if candidate.documents is None:
        return None
    if pair is not None and given in ("yes", "no"):
        parts: Sequence[str] = (pair[1], pair[2])
    elif options is not None and given in {normalize_answer(option) for option in options}:
        parts = options
    else:
        return None
    documents = two_documents(candidate, candidate.documents, parts)
    if documents is None:
        return None
    return (pair[0] if pair is not None else "choice"), given, options, documents


_SAME_WHAT = re.compile(r"\bsame\s+([^?]+?)\W*$", re.IGNORECASE)


def same_what(question: str) -> str | None:
    """What a "same" question (paired_subjects) asks the two things to share, as the question words it:
    "nationality" in "Were A and B of the same nationality?", "level of city" in "Are A and B the same level of
    city?"; None for any other question, or where nothing follows "same"."""
    pair = paired_subjects(question)
    found = _SAME_WHAT.search(question) if pair is not None and pair[0] == "same" else None
    return found.group(1).strip() if found is not None else None


# "What occupation do (both) A and B share?", "Where are A and B located?": a plural auxiliary right before the
# pair, the second thing ending at what is asked of both (or the question's end).
_WH_OPENING = r"^\W*(?:(?:in|on|at|for)\s+)?(?:what|which|where|who|how)\b.*?\b"  # up to the auxiliary
_PAIR_AFTER = re.compile(
    _WH_OPENING + r"(?:are|were|do|did|have)\s+(?:both\s+)?(.+?)\s+and\s+(.+?)"
    r"(?:\s+(?:both|share|shared|have|has|had|located|based|in\s+common)\b|\s*\?|$)",
    re.IGNORECASE,
)
# "What profession does A and B have in common?": a singular auxiliary, as people write it, only before "share" or
# "have in common" ("Where does the hotel and casino located in ... stand?" pairs nothing).
_PAIR_DOES = re.compile(
    _WH_OPENING + r"does\s+(?:both\s+)?(.+?)\s+and\s+(.+?)\s+(?:share|have\s+in\s+common)\b",
    re.IGNORECASE,
)
# "A and B are both best known for what profession?": the pair opens the question, before a plural verb.
_PAIR_BEFORE = re.compile(r"^\W*(?:both\s+)?(.+?)\s+and\s+(.+?)\s+(?:are|were|both)\b", re.IGNORECASE)
MAX_SHARED_WORDS = 8
_OPENS_CLAUSE = frozenset(["who", "whom", "whose", "which", "what", "that", "where", "when", "how", "why"])


def shared_subjects(question: str) -> tuple[str, str] | None:
    """The two things an open question asks what they have in common: A and B of "What occupation do (both) A and
    B share / have?", "Where are A and B located?" (a plural auxiliary right before "A and B"; "does" before "A
    and B share / have in common") or of "A and B are (both) ... what ...?" (the pair opens the question); None for
    any other shape, and for a second part that opens a clause ("Who wrote X and who died in 2007?"). Each part may
    carry words around the name ("social anthropologists Alfred Gell"); the caller finds the name in it. Whether
    the question is open is the caller's to know (`shared` looks at open questions only)."""
    opens_with_wh = re.match(r"^\W*(?:what|which|where|who|whom|whose|when|how|why|in|on|at|for)\b", question, re.I)
    if opens_with_wh:
        match = _PAIR_AFTER.search(question) or _PAIR_DOES.search(question)
    else:
        match = _PAIR_BEFORE.search(question)
    if match is None:
        return None
    first, second = (part.strip(" ,") for part in match.groups())
    if not first or not second or second.split()[0].lower() in _OPENS_CLAUSE:
        return None
    if max(len(first.split()), len(second.split())) > MAX_SHARED_WORDS:  # a clause, not a name
        return None
    return first, second
