"""Comparisons read off a question and measured in documents: which option has the earlier year or the larger size.

Why: a 1.5B model that has read "Mount Kilimanjaro ... at 5,895 metres" and "Mount Elbrus ... a height of 5,642
metres" still answers "Mount Elbrus" to "Which is higher, Mount Kilimanjaro or Mount Elbrus?" about as often as
not: it reads both numbers and then guesses which is larger. Twelve of the 25 sample questions the default agent
got wrong were such comparisons. Comparing two numbers is not a language task, so the `compare` check
(checks/pairs.py) does it: when the model picks an option whose number loses, the refusal shows both numbers and
which is larger, and the model answers again.

What is compared (`comparison`), from the question's comparative word:
- `time`: first, earlier, earliest, older, oldest, sooner (the smaller year wins); later, latest, younger,
  youngest, newer (the larger year wins). Each option's year is the first year (1000-2099) of the sentence of its
  document that shares a word with the question ("born", "founded", "sank": the event compared), or else of the
  first sentence with a year.
- `size`: higher, highest, taller, tallest, longer, longest, larger, largest, bigger, biggest, deeper, deepest
  (the larger measure wins); shorter, lower, smaller (the smaller wins). A measure is a number with a unit of
  length (metres, kilometres, feet, miles, with their abbreviations), compared in metres, taken like the year.
- `count`: a comparative followed by what is counted or measured, in lower case ("the higher atomic number",
  "a larger population", "more members"): higher, larger, bigger, greater, more (the larger number wins); lower,
  smaller, fewer, less (the smaller wins). Each option's number is the first one its document writes after those
  words (within a few words: "atomic number 79", "a population of 8,336,817") or before the last of them ("47
  members"); a number written like a year (1000-2099, no comma) is not a count. This comes before `size`, so
  "Which is higher, A or B?" is still a height.
- `same` (same_year): "Were A and B born in the same year?" (`paired_subjects`): the two years, read the
  same way, are equal or not; the `same` check answers yes or no by them. `paired_subjects` reads the two things
  a yes/no question asks one thing of ("Are both A and B X?", "Were A and B born in the same year?"), for this
  and for the `sides` and `same` checks.
The options are the two names around the question's "or" (answer_form.choice_options: "Which is higher, A or
B?", "Which band, A or B, had more members?", "Which opened first A or B?"). Anything else (no comparative, no
options, a number with no unit, equal numbers) gives no verdict, and the model's answer stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from offline_agent.answer_form import AUXILIARIES, choice_options, reads_as_year
from offline_agent.retrieval.sentences import split_sentences

_SMALLER_YEAR = frozenset(["first", "earlier", "earliest", "older", "oldest", "sooner"])
_LARGER_YEAR = frozenset(["later", "latest", "younger", "youngest", "newer", "newest"])
_LARGER_SIZE = frozenset(
    ["higher", "highest", "taller", "tallest", "longer", "longest", "larger", "largest", "bigger", "biggest"]
    + ["deeper", "deepest"]
)
_SMALLER_SIZE = frozenset(["shorter", "shortest", "lower", "lowest", "smaller", "smallest"])
_MORE = frozenset(["higher", "larger", "bigger", "greater", "more"])
_FEWER = frozenset(["lower", "smaller", "fewer", "less"])
# Words that end what a count is of ("more members than ...", "the higher atomic number of ...").
_COUNT_ENDS = frozenset(
    ["than", "of", "in", "on", "at", "or", "and", "for", "to", "by", "with", "as", "the", "a", "an", "is", "was"]
    + ["are", "were", "has", "had", "have", "did", "does", "do", "above", "below", "over", "under", "into", "from"]
    + ["among", "per", "up", "down", "about", "around", "after", "before", "since", "during", "when"]
)
_COUNT = r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\d|,\d)(?:\s+(million|billion))?"
_SCALE = {None: 1.0, "million": 1e6, "billion": 1e9}
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
# A year: four digits not inside a longer number ("1,200", "12005") and not a decade ("the 1990s"); a comma after it
# ends a clause ("in 1865, when ...") unless a digit follows ("1865,000").
_YEAR = re.compile(r"(?<![\d,.])(1\d{3}|20\d{2})(?!\d|,\d|s\b)")
_METRES = {
    "m": 1.0, "metre": 1.0, "metres": 1.0, "meter": 1.0, "meters": 1.0,
    "km": 1000.0, "kilometre": 1000.0, "kilometres": 1000.0, "kilometer": 1000.0, "kilometers": 1000.0,
    "ft": 0.3048, "foot": 0.3048, "feet": 0.3048,
    "mi": 1609.344, "mile": 1609.344, "miles": 1609.344,
}  # fmt: skip
_LENGTH = re.compile(
    r"(?<![\d.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*(" + "|".join(sorted(_METRES, key=len, reverse=True)) + r")\b"
)
# Words of a question that name no event: they never pick the sentence a number is read from.
_PLAIN = frozenset(
    ["which", "who", "whom", "whose", "what", "is", "are", "was", "were", "the", "a", "an", "of", "or", "and", "in"]
    + ["on", "at", "to", "by", "for", "from", "with", "did", "does", "do", "has", "have", "had", "been", "one"]
    + [*_SMALLER_YEAR, *_LARGER_YEAR, *_LARGER_SIZE, *_SMALLER_SIZE, "more", "less", "than", "two"]
)


@dataclass(frozen=True)
class Comparison:
    """What a comparing question compares: `dimension` ("time" or "size"), whether the larger number wins, the
    comparative as the question writes it, its two options, and its other words (which pick the sentence)."""

    dimension: str
    larger_wins: bool
    word: str
    options: tuple[str, str]
    cues: frozenset[str]
    counted: tuple[str, ...] = ()  # what a `count` counts, as the question writes it ("atomic", "number")


@dataclass(frozen=True)
class Measure:
    """A number read for one option: its value (a year, or metres) and the text it was read from."""

    value: float
    text: str


def comparison(question: str) -> Comparison | None:
    """The comparison `question` asks for, or None when it asks for none this module can measure."""
    options = choice_options(question)
    if options is None:
        return None
    words = [word.lower() for word in _WORD.findall(question)]
    named = {w.lower() for option in options for w in _WORD.findall(option)}
    for word in words:
        counted = _counted(question, word, named) if word in _MORE | _FEWER else ()
        if counted:
            cues = frozenset(w for w in words if w not in _PLAIN and w not in named and len(w) > 2)
            return Comparison("count", word in _MORE, word, options, cues, counted)
        for dimension, larger_wins, vocabulary in (
            ("time", False, _SMALLER_YEAR),
            ("time", True, _LARGER_YEAR),
            ("size", True, _LARGER_SIZE),
            ("size", False, _SMALLER_SIZE),
        ):
            if word in vocabulary:
                cues = frozenset(w for w in words if w not in _PLAIN and w not in named and len(w) > 2)
                return Comparison(dimension, larger_wins, word, options, cues)
    return None


def _counted(question: str, word: str, named: set[str]) -> tuple[str, ...]:
    """The lower-case words after the comparative `word` that say what is counted ("atomic number" in "Which
    element has the higher atomic number, gold or mercury?"), up to three, before punctuation, an option's word or
    a word of _COUNT_ENDS; () when none follow."""
    after = re.search(rf"\b{re.escape(word)}\b([^,?;:!.]*)", question, re.IGNORECASE)
    counted: list[str] = []
    for following in _WORD.findall(after.group(1)) if after else []:
        if following.lower() in _COUNT_ENDS or following.lower() in named or not following.islower():
            break
        counted.append(following)
        if len(counted) == 3:
            break
    return tuple(counted)


def same_year(question: str) -> Comparison | None:
    """The comparison of a "same year" question ("Were A and B born in the same year?",
    paired_subjects): a time comparison of its two subjects, as the question writes them (the second
    may run on to the end of the question; the caller finds the name it opens with); its verdict is whether the two
    years are equal. The cues are the question's lower-case words (names are capitalised), plain words aside."""
    pair = paired_subjects(question)
    words = _WORD.findall(question)
    if pair is None or pair[0] != "same" or "year" not in {word.lower() for word in words}:
        return None
    plain = _PLAIN | {"same", "year", "both"}
    cues = frozenset(word for word in words if word.islower() and word not in plain and len(word) > 2)
    return Comparison("time", False, "same", (pair[1], pair[2]), cues)


def measure(text: str, how: Comparison) -> Measure | None:
    """The number `text` (an option's document) gives for the comparison: from the first sentence that shares a
    word with the question, else from the first sentence that has such a number at all (a count: from the first
    sentence that gives one for the words counted); None when none has."""
    sentences = [text[start:end].strip() for start, end in split_sentences(text)]
    if how.dimension == "count":
        return next((Measure(value, s) for s in sentences if (value := _count(s, how.counted)) is not None), None)
    read = _year if how.dimension == "time" else _length
    found = [(sentence, value) for sentence in sentences if (value := read(sentence)) is not None]
    if not found:
        return None
    for sentence, value in found:
        if how.cues & {word.lower() for word in _WORD.findall(sentence)}:
            return Measure(value, sentence)
    sentence, value = found[0]
    return Measure(value, sentence)


def _year(sentence: str) -> float | None:
    match = _YEAR.search(sentence)
    return float(match.group(1)) if match else None


def _length(sentence: str) -> float | None:
    match = _LENGTH.search(sentence)
    if match is None:
        return None
    whole, fraction, unit = match.groups()
    return _number(whole, fraction) * _METRES[unit.lower()]


def _count(sentence: str, counted: tuple[str, ...]) -> float | None:
    """The number `sentence` gives for `counted`: the first after those words (a few words on at most, "a
    population of 8,336,817"), else the one before their last ("47 members"); one that reads as a year is none."""
    last = re.escape(counted[-1].removesuffix("s")) + "s?"
    words = r"\s+".join([*map(re.escape, counted[:-1]), last])
    for pattern in (rf"(?<!\w){words}\b(?:\W+\w+){{0,3}}?\W+{_COUNT}", rf"{_COUNT}\s+(?:\w+\s+)?{last}\b"):
        for match in re.finditer(pattern, sentence, re.IGNORECASE):
            whole, fraction, scale = match.groups()
            if fraction is None and scale is None and reads_as_year(whole):
                continue  # a year, not a count
            return _number(whole, fraction) * _SCALE[scale]
    return None


def _number(whole: str, fraction: str | None) -> float:
    """A number as a text writes it: its whole part (with thousands commas) and its decimals, if any."""
    return float(whole.replace(",", "") + (f".{fraction}" if fraction else ""))


def winner(how: Comparison, first: Measure, second: Measure) -> int | None:
    """0 or 1: which option's number wins the comparison; None when they are equal."""
    if first.value == second.value:
        return None
    first_larger = first.value > second.value
    return 0 if first_larger == how.larger_wins else 1


__all__ = ["Comparison", "Measure", "comparison", "measure", "same_year", "winner"]


def paired_subjects(question: str) -> tuple[str, str, str] | None:
    """The two things a yes/no question asks one thing about, and how: ("both", A, B) for "Are both A and B X?" and
    "Are A and B both X?" (X must hold of each), ("same", A, B) for "Were A and B born in the same year?"; None
    for any other question. A and B are the question's text around its first "and" (or "or", as in "Are both A or
    B X?"): the first ends at it, the second runs on to "both" or to the end, so it may carry the rest of the
    question ("Affiliated Managers Group based in Massachusetts"); the caller finds the name it opens with."""
    words = question.split()
    if len(words) < 4 or words[0].lower() not in AUXILIARIES:
        return None
    lowered = {word.lower().strip(",?") for word in words}
    if "different" in lowered or "neither" in lowered or "either" in lowered:
        return None
    how = "same" if "same" in lowered else "both" if "both" in lowered else None
    if how is None:
        return None
    rest = re.sub(r"^both\s+", "", " ".join(words[1:]), flags=re.IGNORECASE)
    joined = re.search(r",?\s+and\s+", rest) or re.search(r",?\s+or\s+", rest)
    if joined is None:
        return None
    first, second = rest[: joined.start()], rest[joined.end() :]
    second = re.split(r",?\s+both\b", second, maxsplit=1, flags=re.IGNORECASE)[0]
    first, second = first.strip(" ,?"), second.strip(" ,?")
    return (how, first, second) if first and second else None
