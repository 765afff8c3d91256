"""What form a question's answer takes, read off the question by rules: yes/no, one of its options, or a span read.

Why: a grounded Final (grounding.py) may be any span of what the run read, and a small model uses that freedom to
answer a comparison with a year it read ("1957" for "Which was founded first, A or B?"), a yes/no question with a
sentence, and a bridge question with the entity the question itself names ("Gator Country" for "What band did the
Gator Country guitarist come from?"). The question says which of three forms its answer has:

- `yes_no`: the question opens with an auxiliary verb ("Are both ...", "Did ...", "Were A and B ..."): the answer
  is `yes` or `no`. When it also offers options ("Are both A or B a genus of orchids?") the options are allowed
  too; when it offers options and compares ("Is A or B written more for ...?", "Was A or B born first?"), it
  asks which of them, and only the options are (a `choice`, with no yes or no).
- `choice`: a which/who question (perhaps after an opening phrase and a comma: "On Linux, which has the larger
  default: A or B?") that offers options joined by "or" ("Who was born first, A or B?"): the answer
  is one of the options as the question writes it (`choice_options`: the two names around "or" after a comma or
  a colon, or after the comparative word: "Which magazine was started first A or B?"), or with a capital
  first letter ("radium" or "Radium"); where the options cannot be told apart, any span of the question. "Which
  of A and B ...?" with two names is a choice too (`which_of_options`).
- `open`: any other question: the answer is a span of what the searches returned, never of the question alone
  (an open question does not contain its own answer), and never yes/no.

The rules are deliberately narrow and err towards `open`: "or" makes a which/who question a choice only when an
option after it reads as a name (a capital, a digit or a quote, possibly after "the") or the question compares
("first", "older", "more", ...), so "Which company makes cars or trucks in Sweden?" stays open. A question the
rules misread loses only the restriction, since every form still allows what was read for `open` questions.

An open question may also say what kind of answer it wants (`wants`): a year or date ("In which year ...",
"When was ...", not a "When" that opens a clause before the question: "When a standby can't get WAL, how long does
it wait?"), or a number ("How many ...", "how much", "how old", ..., or "What was the population / number /
attendance ... of ...?"). `AnswerForm.fits` says whether an answer is of that kind: it has a digit or a number
word in it, a number is no year ("1959" for "How many copies ... sold?", "in 1978"), and a date no bare number of
one to three digits ("17"). On a step no check sees, the verify strategy's grammar offers only the spans read
that fit, where the run has read any.

What else a question asks (a kind of thing, the event a date dates, a part of a name, two things side by side, a
thing it refers to and does not name) is read by the check that acts on it, in its own module of
offline_agent/checks; this module holds what several of them, and the grammar, share.
Limits: English questions only; a question in another language is `open`, and wants nothing in particular.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from offline_agent.grounding import Grounding, OptionsGrounding

KINDS = ("open", "yes_no", "choice")

AUXILIARIES = frozenset(
    ["is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could", "will", "would"]
    + ["shall", "should", "may", "might", "must", "am"]
)
_CHOOSERS = frozenset(["which", "who", "whom", "whose"])
# A which/who question after an opening phrase and a comma ("In pg_trgm, which has ...?", "On Linux, which ...?").
_OPENED_CHOOSER = re.compile(r"^[^,?:]{2,40},\s*(which|who|whom|whose)\b", re.IGNORECASE)
# Words that make an "A or B" question a comparison even when its options are written in lower case.
_COMPARING = re.compile(
    r"\b(first|last|earlier|later|older|oldest|younger|youngest|newer|higher|highest|lower|longer|longest|shorter|"
    r"larger|largest|smaller|bigger|biggest|more|less|fewer|most|least|further|farther|closer|taller|tallest|"
    r"heavier|lighter|faster|slower)\b",
    re.IGNORECASE,
)
# Comparatives that do not make "or" offer options (_COMPARING does), but still compare.
_COMPARING_MORE = re.compile(
    r"\b(better|worse|best|worst|earliest|latest|sooner|soonest|deeper|deepest|lowest|shortest|smallest|newest|"
    r"greater|greatest|fewest|lightest|heaviest|fastest|slowest|closest|furthest|farthest)\b",
    re.IGNORECASE,
)
_OR = re.compile(r"\bor\b\s+(?:the\s+|a\s+|an\s+)?(\S)", re.IGNORECASE)
# "Which of A and B ...?": two options joined by "and" (which_of_options keeps them only when each is a name).
_WHICH_OF = re.compile(r"^\W*(?:which|who)\s+of\s+([A-Z0-9][^,:?]*?)\s+and\s+([A-Z0-9][^,:?]*?)\s*\?", re.IGNORECASE)
_NAME_LINKS = frozenset(["of", "the", "de", "la", "von", "van", "del", "da", "du", "le"])  # inside a name
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
# "When" asks for a date when an auxiliary follows it ("When was X born?"); "When a standby can't get WAL, how long
# does it wait?" opens with a clause, and the question is what follows the comma.
_WANTS_DATE = re.compile(
    rf"\b(?:what|which)\s+(?:year|date|decade|century)\b|^\W*when\s+(?:{'|'.join(sorted(AUXILIARIES))})\b|\bwhen\W*$",
    re.IGNORECASE,
)
# A population, a number or an attendance is a count.
_WANTS_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|long|old|tall|high|far|large|big|deep|wide)\b"
    r"|\b(?:what|which)\s+(?:is|was|are|were)\s+the\s+(?:[\w-]+\s+)?"
    r"(?:population|inhabitants?|number|attendance|capacity|enrol?ment)\s+of\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"1\d{3}|20\d{2}")
# A year inside a text, not part of a longer number ("1,462"). "1959 copies" is a year too: offered such spans for a
# count, the model wrote "1959 issue of Nugget" and "1972 known as Standard Oil Company".
_IN_TEXT_YEAR = re.compile(rf"(?<![\d,.])(?:{_YEAR.pattern})(?!\d|[,.]\d)")
# A bare number of one to three digits: a day, a count or a page, not a year ("17" of "February 17, 1945").
_SHORT_NUMBER = re.compile(r"\d{1,3}")
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|billion|dozen|first|second|third|fourth|fifth)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AnswerForm:
    """The form of one question's answer: its kind, and the question (the source of a choice's options, and what
    the checks read the rest of what it asks off)."""

    kind: str
    question: str
    yes_no: bool
    wants: str | None = None  # "date" or "number": what an open question asks for, when it says
    options: tuple[str, ...] = ()  # a choice's options, where choice_options finds them

    def fits(self, answer: str) -> bool:
        """Whether `answer` is of the kind the question wants (always, when it wants nothing in particular). A
        number must not read as a year, nor hold no number but years ("in 1978"): English writes a count or measure
        of a thousand or more with a comma ("1,462 hypermarkets"), and a year without ("1959", answering "How many
        copies ... sold?"). A date is not a bare number of one to three digits ("17", the day of "February 17,
        1945": a date before the year 1000 is written with its era or in words)."""
        if self.wants == "number" and not _NUMBER.search(_IN_TEXT_YEAR.sub(" ", answer)):
            return False
        if self.wants == "date" and _SHORT_NUMBER.fullmatch(answer.strip()):
            return False
        return self.wants is None or bool(_NUMBER.search(answer))

    @property
    def reads_observations(self) -> bool:
        """Whether what the searches return may be the answer (open questions) or only the question's options."""
        return self.kind == "open"

    def grounding(self) -> Grounding:
        """The evidence a Final starts from, before any search: the options of a choice (or, where they cannot be
        told apart, the spans of the question), yes/no, or nothing."""
        if self.options:
            return OptionsGrounding(self.options, yes_no=self.yes_no)
        texts = [self.question] if self.kind == "choice" else []
        return Grounding(texts, yes_no=self.yes_no)


def answer_form(question: str) -> AnswerForm:
    """The form of `question`'s answer, by the rules of the module docstring."""
    words = [word.lower() for word in _WORD.findall(question)]
    first = words[0] if words else ""
    opened = _OPENED_CHOOSER.match(question)
    if opened is not None:  # "On Linux, which has the larger default: A or B?"
        first = opened.group(1).lower()
    offers = _offers_options(question)
    if first in AUXILIARIES:
        if offers:
            which = compares(question)  # "Is A or B written more for ...?" asks which, not whether
            return AnswerForm("choice", question, yes_no=not which, options=choice_options(question) or ())
        return AnswerForm("yes_no", question, yes_no=True)
    if first in _CHOOSERS and offers:
        return AnswerForm("choice", question, yes_no=False, options=choice_options(question) or ())
    named = which_of_options(question)
    if named is not None:
        return AnswerForm("choice", question, yes_no=False, options=named)
    wants = "date" if _WANTS_DATE.search(question) else "number" if _WANTS_NUMBER.search(question) else None
    return AnswerForm("open", question, yes_no=False, wants=wants)


def _offers_options(question: str) -> bool:
    """Whether the question offers options joined by "or" (see the module docstring for the rule)."""
    match = _OR.search(question)
    if match is None:
        return False
    opener = match.group(1)
    return opener[0].isupper() or opener[0].isdigit() or opener[0] in "\"'“‘" or bool(_COMPARING.search(question))


def reads_as_year(answer: str) -> bool:
    """Whether `answer` is a bare four-digit year, 1000 to 2099, as English writes years and not counts."""
    return bool(_YEAR.fullmatch(answer.strip()))


def compares(question: str) -> bool:
    """True if `question` has a comparative or superlative ("older", "more", "highest", "best"): it asks which
    option has more of something, not which one something holds of."""
    return bool(_COMPARING.search(question) or _COMPARING_MORE.search(question))


def choice_options(question: str) -> tuple[str, str] | None:
    """The two options of "..., A or B?", "...: A or B?" or "..., A or B, ...?" (each between a comma or colon and
    "or"), else of "... COMPARATIVE A or B?" ("Which magazine was started first Arthur's Magazine or First for
    Women?"); a leading article and quotes are dropped. None when neither shape fits."""
    match = re.search(r"[,:]\s*([^,:?]+?)\s+or\s+([^,:?]+?)\s*(?:[,?]|$)", question)
    if match is None:
        joined = re.search(r"\s+or\s+", question)
        before = [m for m in _COMPARING.finditer(question) if joined and m.end() <= joined.start()]
        if not before:
            return None
        match = re.match(r"\s+([^,:?]+?)\s+or\s+([^,:?]+?)\s*(?:\?|$)", question[before[-1].end() :])
        if match is None:
            return None
    options = tuple(_bare_option(part) for part in match.groups())
    return (options[0], options[1]) if all(options) and options[0] != options[1] else None


def which_of_options(question: str) -> tuple[str, str] | None:
    """The two options of "Which of A and B VERB ...?" ("Which of Jonny Craig and Pete Doherty has been a member of
    more bands?": Jonny Craig, Pete Doherty): A is the text between "of" and "and", B the words after "and" up to
    the first one in lower case (the predicate); each must begin with a capital or a digit ("Which of the films
    and books ..." offers no names). None when the question has another shape."""
    match = _WHICH_OF.match(question)
    if match is None or not (match.group(1)[0].isupper() or match.group(1)[0].isdigit()):
        return None
    words = []
    for word in match.group(2).split():
        if not (word[0].isupper() or word[0].isdigit() or (words and word.lower() in _NAME_LINKS)):
            break
        words.append(word)
    while words and words[-1].lower() in _NAME_LINKS:
        words.pop()
    first, second = _bare_option(match.group(1)), _bare_option(" ".join(words))
    return (first, second) if first and second and first != second else None


def _bare_option(text: str) -> str:
    return _without_article(text).strip("\"'“”‘’ ")


def _without_article(text: str) -> str:
    """`text`, stripped, without an article that opens it ("the Governor": "Governor")."""
    return re.sub(r"^(?:the|a|an)\s+", "", text.strip(), flags=re.IGNORECASE)


__all__ = [
    "AUXILIARIES",
    "KINDS",
    "AnswerForm",
    "answer_form",
    "choice_options",
    "compares",
    "reads_as_year",
    "which_of_options",
]
