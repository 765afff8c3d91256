"""Quantities: a bare number that the text writes with a unit of measure is answered with that unit.

- `unit as written` (a rewrite): the model copies the number of "The default is 80 bits." and stops; "80" of what is
  no answer to "What signature length ...?". Where the sentences read that write the answer write it with a unit of
  measure right after it ("80 bits", "10 seconds", "64MB", "32 kilobytes per second"), and all of them with the
  same unit, the answer is the number with that unit as written. Not where the question names the unit itself
  ("... in megabytes?": the number alone is the answer), not for a date question (a year is no quantity), not
  after a count noun ("three connections" answers "how many" as "three" does), and not where no sentence read
  writes the answer with a unit.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import reads_as_year
from offline_agent.checks.base import Candidate

# Units of measure, each with the other names it goes by (a question that names any of them asks in that unit).
# Spelled out or abbreviated, singular or plural; a one-letter unit only where it is written onto the number.
_UNIT_NAMES: tuple[tuple[str, ...], ...] = (
    ("bit", "bits"),
    ("byte", "bytes"),
    ("kB", "KB", "kiB", "KiB", "kilobyte", "kilobytes"),
    ("MB", "MiB", "megabyte", "megabytes"),
    ("GB", "GiB", "gigabyte", "gigabytes"),
    ("TB", "TiB", "terabyte", "terabytes"),
    ("us", "µs", "microsecond", "microseconds"),
    ("ms", "millisecond", "milliseconds"),
    ("s", "sec", "secs", "second", "seconds"),
    ("min", "mins", "minute", "minutes"),
    ("h", "hr", "hrs", "hour", "hours"),
    ("d", "day", "days"),
    ("week", "weeks"),
    ("month", "months"),
    ("year", "years"),
    ("%", "percent", "per cent"),
    ("mm", "millimetre", "millimetres", "millimeter", "millimeters"),
    ("cm", "centimetre", "centimetres", "centimeter", "centimeters"),
    ("m", "metre", "metres", "meter", "meters"),
    ("km", "kilometre", "kilometres", "kilometer", "kilometers"),
    ("mi", "mile", "miles"),
    ("ft", "foot", "feet"),
    ("inch", "inches"),
    ("g", "gram", "grams"),
    ("kg", "kilogram", "kilograms"),
    ("lb", "lbs", "pound", "pounds"),
    ("t", "ton", "tons", "tonne", "tonnes"),
    ("Hz", "hertz"),
    ("kHz", "kilohertz"),
    ("MHz", "megahertz"),
    ("GHz", "gigahertz"),
    ("mph",),
    ("°C", "°F", "degree", "degrees"),
)
_FAMILY = {name.casefold(): family for family in _UNIT_NAMES for name in family}
_ALTERNATION = "|".join(re.escape(name) for name in sorted({n for f in _UNIT_NAMES for n in f}, key=len, reverse=True))
# A unit after a number: onto it ("64MB", "5s", "10min") or after one space, then perhaps "per" and another unit
# ("kilobytes per second"). A spaced unit is a word of two letters or more, or a symbol ("%"): "80 s" is rarely a unit.
_UNIT_AFTER = re.compile(
    rf"(?P<space>\s?)(?P<unit>(?:{_ALTERNATION})(?:\s+per\s+(?:{_ALTERNATION}))?)(?![\w°])",
)
# A number as an answer: digits with separators, or a number word.
_BARE_NUMBER = re.compile(
    r"\d[\d,.]*|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
    r"fifty|sixty|hundred",
    re.IGNORECASE,
)


class Unit:
    """A bare number written with the unit of measure the sentences read write after it."""

    name = "unit as written"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        number = candidate.answer.strip()
        if candidate.form.kind != "open" or candidate.form.wants == "date" or not _BARE_NUMBER.fullmatch(number):
            return None
        return self.name, with_unit(number, candidate.read_sentences(), candidate.question)


def with_unit(number: str, sentences: list[str], question: str) -> str | None:
    """`number` with the unit every sentence of `sentences` that writes it with a unit writes after it ("80 bits"
    of "The default is 80 bits."; "10min" and "10 minutes" are one unit, the first written is kept); None where none
    does, two write different units, or `question` names the unit."""
    # Digits may carry a unit written onto them ("64MB"); a number word is a whole word ("four megabytes").
    end = r"(?!\d|[.,]\d)" if number[0].isdigit() else r"(?!\w)"
    at = re.compile(rf"(?<![\w.,-]){re.escape(number)}{end}", re.IGNORECASE)
    year = reads_as_year(number)
    written: dict[tuple[str, ...], str] = {}
    for sentence in sentences:
        for found in at.finditer(sentence):
            unit = _unit_at(sentence, found.end(), year)
            if unit is not None:
                space, name, family = unit
                written.setdefault(family, f"{number}{space}{name}")
    if len(written) != 1:
        return None
    [(family, answer)] = written.items()
    # A word of one letter in a question is no unit it names ("s" of "it's", "t" of "don't").
    named = {_FAMILY.get(word.casefold()) for word in re.findall(r"[^\W\d_]{2,}|%", question)}
    return None if family in named else answer


def _unit_at(sentence: str, at: int, year: bool) -> tuple[str, str, tuple[str, ...]] | None:
    """The space, the unit of measure `sentence` writes at `at` (right after a number) and the unit's family of
    names; None where there is none ("100 connections": a count noun is no unit). A one-letter unit must be written
    onto the number, and not onto a year: "the 1990s" are no seconds."""
    match = _UNIT_AFTER.match(sentence, at)
    if match is None:
        return None
    space, unit = match.group("space"), match.group("unit")
    base = re.split(r"\s+per\s+", unit)[0]  # "kilobytes" of "kilobytes per second"
    if len(base) < 2 and base != "%" and (space or year):
        return None
    return space, unit, _FAMILY[base.casefold()]
