"""Checks of an open question's answer against the kind of thing the question asks for: a number or a date
(AnswerForm.wants), or a "which/what NOUN" (`asks_for`, read off the question here, with the kinds of the things it
describes on the way, `described`). The answer's own document (the document titled with it), when there is
one, says what the answer is; an answer of another kind is most often the entity on the way to the answer, so
several of these refusals also show that document (`Refusal.show_document`).

- `kind`: the question asks for a year, a date or a number and the answer is none ("Kansas" for "a population of how
  many inhabitants?"), or asks for a number and gets a year ("1959" for "How many copies ... sold?": English writes
  a count of a thousand or more with a comma), unless a sentence read writes it as a count of what the question
  names ("1024 bytes" for "How many bytes ...?": a manual writes no comma), or a date and gets a bare number of one
  to three digits ("17"). A name that titles a document ("Carrefour" for "... a chain that operated how many
  hypermarkets?") also shows its document. Any other bare number may be the thing itself in a manual's terms (an
  exit status 2, permissions 0640, a release 14), so it stands.
- `asks_for`: a "which/what NOUN" question ("Which river flows through the birth city of James Joyce?") answered
  with a document whose first sentence does not say it is one ("Dublin": "Dublin is the capital and largest city
  of Ireland"). Only what the sentence says its subject is counts, not the names of what it is in.
- `described`: the question describes an entity on the way ("the company that Sachin Warrier worked for") and the
  answer's document says it is one ("Tata Consultancy Services ... is an Indian multinational ... company"): the
  model named the hop, not what the question asks about it.

And one rewrite: the answer to a "what type / kind / sort of NOUN" question that a sentence read writes before the
noun gets the noun ("fictional character" of "a fictional character" for "fictional"), as answers to such questions
name the kind with its noun.
"""

from __future__ import annotations

import re

from offline_agent.answer_form import AUXILIARIES, AnswerForm, reads_as_year
from offline_agent.checks.base import Candidate, Check, Refusal
from offline_agent.prompts import prompt_table
from offline_agent.retrieval.sentences import first_sentence

_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
# "what type / kind / sort of NOUN": the noun an answer names a kind of.
_TYPE_OF = re.compile(r"\b(?:what|which)\s+(?:type|kind|sort)s?\s+of\s+([^\W\d_]+)", re.IGNORECASE)
_KIND_WORD = r"([^\W\d_]+(?:-[^\W\d_]+)*)"
# "Which other film ...": "other" qualifies the kind asked for and is read past.
_ASKS_FOR = re.compile(
    rf"\b(?:which|what)\s+(?:(?:an)?other\s+)?{_KIND_WORD}(?:\s+{_KIND_WORD})?(?:\s+{_KIND_WORD})?", re.IGNORECASE
)
# After which/what: words that are not a kind of thing (verbs, articles, prepositions, generic nouns, properties);
# the kind asked for is read up to the first of them.
_NOT_A_KIND = frozenset(
    [*AUXILIARIES, "the", "a", "an", "of", "in", "on", "at", "for", "from", "to", "by", "with", "that", "which"]
    + ["through", "into", "about", "after", "before", "during", "under", "over", "near", "between", "as", "than"]
    + ["and", "or", "not", "did", "also"]
    + ["who", "one", "ones", "type", "types", "kind", "kinds", "sort", "name", "names", "part", "other", "else"]
    + ["year", "years", "date", "decade", "century", "number", "time", "day", "month"]
    # a property of the thing asked about, not a kind of thing a document is about
    + ["nationality", "profession", "professions", "occupation", "occupations", "role", "roles", "distinction"]
    + ["field", "fields", "way", "ways", "genre", "genres"]
    # adjectives that come before a kind the question may capitalise ("which former Governor of Arkansas")
    + ["former", "current", "first", "last", "same", "only", "famous"]
)
# Words that follow a verb, not a noun, right after the kind ("flows through", "hosted the").
_VERB_OBJECTS = frozenset(["the", "a", "an", "through", "in", "on", "at", "into", "from", "to", "by", "with", "near"])
# Words a document's first sentence uses for a kind the questions ask for ("Warsaw is the capital of Poland" says
# it is a city): a definition often names the narrower kind.
_ALSO_CALLED: dict[str, tuple[str, ...]] = {
    "city": ("capital", "town", "municipality", "metropolis", "village", "port", "commune", "borough"),
    "town": ("city", "village", "municipality", "commune", "borough", "suburb"),
    "place": ("city", "town", "village", "country", "region", "area"),
    "country": ("nation", "state", "kingdom", "republic"),
    "film": ("movie", "documentary"),
    "movie": ("film", "documentary"),
    "show": ("series", "programme", "program", "sitcom"),
    "actor": ("actress",),
    "author": ("writer", "novelist", "poet", "playwright", "journalist"),
    "writer": ("author", "novelist", "poet", "playwright", "journalist", "screenwriter"),
    "band": ("group", "duo", "trio"),
    "group": ("band", "duo", "trio"),
    "company": ("corporation", "business", "firm", "manufacturer", "retailer", "chain", "conglomerate"),
    "person": ("man", "woman", "actor", "actress", "singer", "writer", "politician", "player"),
}
# "the NOUN that / who / which / whose / where / in which ...": the question describes an entity on the way to its
# answer ("Where is the company that Sachin Warrier worked for headquartered?"); lower-case words only, so a name
# ("the Vermont team that ...") is not read as a kind.
_DESCRIBED = re.compile(
    r"\b(?:the|a|an)\s+(?:[a-z][a-z-]*\s+){0,2}?([a-z][a-z-]*)\s+(?:that|which|who|whom|whose|where|in which)\b"
)
# "What is the mascot of the oldest private university in Georgia?": the question asks for something of an entity it
# describes on the way; the entity's kind is the last word before a preposition, a relative word or the end.
_PROPERTY_OF = re.compile(
    r"^\W*(?:[Ww]hat|[Ww]hich)\s+(?:is|was|are|were)\s+the\s+([a-z][a-z-]*)\s+of\s+(?:the|a|an)\s+"
    r"(?:[a-z][a-z-]*\s+){0,2}?([a-z][a-z-]*)"
    r"(?=\s+(?:in|of|on|at|for|from|by|with|to|that|which|who|whom|whose|where)\b|\s*\?)"
)
_NAMES = frozenset(["name", "names", "title"])  # "What is the name of the ...?" asks for the entity itself
# What may come before such a description when the question asks for the described entity itself ("What is the
# name of the singer who ...", "Who was the actor that ...", "Name the ...").
_ASKS_FOR_DESCRIBED = re.compile(
    r"^\W*(?:(?:what|who|which)\s+(?:is|was|are|were)|name)\s+(?:the\s+)?(?:(?:name|names|title)\s+of\s+)?$",
    re.IGNORECASE,
)
_PREDICATE = re.compile(
    r"\b(?:is|was|are|were)\s+(.*?)(?=\s+(?:of|in|on|at|for|from|by|with|to|near|that|which|who|whose|where|"
    r"located|based|headquartered|founded|created|written|directed|produced|owned|known|named|and\s+the)\b|[.;:]|$)",
    re.IGNORECASE,
)
# Words after a number that count nothing the question names ("1959 in", "2001 was").
_COUNT_LINKS = frozenset(
    ["in", "on", "at", "of", "and", "or", "the", "a", "an", "to", "by", "for", "as", "from", "with", "is", "was", "are"]
    + ["were", "be", "been", "has", "had", "have", "it", "its", "that", "which", "this", "there", "when"]
)
_WORD_PARTS = re.compile(r"[^\W\d_]+")
_WHERE = re.compile(r"^\W*where\b", re.IGNORECASE)
# Kinds of place: a question that asks for one, or describes one on the way, is about a place.
_PLACES = frozenset(
    ["place", "city", "town", "village", "county", "state", "country", "region", "province", "district", "suburb"]
    + ["borough", "municipality", "community", "neighborhood", "neighbourhood", "island", "commune", "parish"]
)
# Nouns whose plural is the singular: the rules of singular would cut "series" to "sery", and a document that says
# it is "a television series" would not be the show a question asks for.
_SAME_IN_PLURAL = frozenset(["series", "species", "news", "means", "headquarters", "crossroads"])


def texts() -> dict[str, str]:
    return prompt_table("answer_checks.toml", "kinds")


def _definition(candidate: Candidate) -> str | None:
    """The first sentence of the answer's own document, which says what it is; None without one."""
    own = candidate.own_document(about_a_place(candidate.form))
    return (first_sentence(own) or None) if own is not None else None


class Kind(Check):
    name = "kind"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form, answer = candidate.form, candidate.answer
        if form.fits(answer) or any(counted_in(form, answer, s) for s in candidate.sentences_holding(answer)):
            return None
        assert form.wants is not None
        template = texts()["kind_year" if reads_as_year(answer) else "kind"]
        observation = template.format(wants=texts()["wants"][form.wants], answer=answer, question=form.question)
        shows = bool(_LETTER.search(answer)) and candidate.own_document(about_a_place(form)) is not None
        return Refusal(self.name, observation, show_document=shows)


class _DefinitionCheck(Check):
    """A check of an answer by its own document's first sentence, which says what the answer is; the refusal shows
    that document."""

    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        form = candidate.form
        sentence = _definition(candidate) if self.applies(form) else None
        text = self.judge(form, candidate.answer, sentence) if sentence is not None else None
        return Refusal(self.name, text, show_document=True) if text is not None else None

    def applies(self, form: AnswerForm) -> bool:
        raise NotImplementedError

    def judge(self, form: AnswerForm, answer: str, sentence: str) -> str | None:
        """The refusal's Observation where `sentence` shows the answer wrong, else None."""
        raise NotImplementedError


class AsksFor(_DefinitionCheck):
    name = "asks_for"

    def applies(self, form: AnswerForm) -> bool:
        return bool(asks_for(form))

    def judge(self, form: AnswerForm, answer: str, sentence: str) -> str | None:
        if describes(form, sentence):
            return None
        kind = " ".join(asks_for(form))
        return texts()["asks_for"].format(kind=kind, answer=answer, definition=sentence, question=form.question)


class Described(_DefinitionCheck):
    name = "described"

    def applies(self, form: AnswerForm) -> bool:
        return bool(described(form))

    def judge(self, form: AnswerForm, answer: str, sentence: str) -> str | None:
        kind = description_in(form, sentence)
        if kind is None or predicate_describes(form, sentence):
            return None
        return texts()["described"].format(answer=answer, kind=kind, definition=sentence, question=form.question)


class TypeNoun:
    """The rewrite of a "what type of NOUN" answer with its noun, as a sentence read writes the two."""

    name = "kind as written"
    before_checks = False

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        form = candidate.form
        if type_of(form) is None:
            return None
        found = (
            with_noun(form, candidate.answer, sentence) for sentence in candidate.sentences_holding(candidate.answer)
        )
        return self.name, next((extended for extended in found if extended is not None), None)


# --- what the question asks: read off it by these checks alone -------------------------------------------------


def asks_for(form: AnswerForm) -> tuple[str, ...]:
    """The words of an open question's "which/what NOUN" that name the kind of thing it asks for ("river" in "Which
    river flows through the birth city of James Joyce?"); () where it wants a date or a number, or is not open.
    Words that name no kind of thing ("What is", "which one", "what type of") ask for nothing in particular."""
    return kind_asked(form.question) if form.kind == "open" and not form.wants else ()


def described(form: AnswerForm) -> tuple[str, ...]:
    """The kinds of the entities an open question describes on the way to its answer ("company" in "Where is the
    company that Sachin Warrier worked for headquartered?"); () for a question that is not open."""
    return _described(form.question, asks_for(form)) if form.kind == "open" else ()


def about_a_place(form: AnswerForm) -> bool:
    """Whether the question asks where, or for a place, or describes one on the way ("what county", "the city
    where ..."): then an answer may name a document titled with its region ("McLean, Virginia")."""
    kinds = {singular(kind) for kind in (*asks_for(form), *described(form))}
    return bool(kinds & _PLACES) or bool(_WHERE.match(form.question))


def describes(form: AnswerForm, text: str) -> bool:
    """Whether `text` (a document's first sentence) names the kind of thing the question asks for, a plural
    or singular of one of its words (always, when it asks for nothing in particular). Past its predicate, a
    capitalised word is part of another thing's name: "McLean is a census-designated place in Fairfax
    County" does not say McLean is a county."""
    kinds = asks_for(form)
    return not kinds or _names_kind(_own_words(text), kinds) is not None


def description_in(form: AnswerForm, text: str) -> str | None:
    """The kind of a described entity (`described`) that `text` (a document's first sentence) says its subject
    is, if any: then the document is about a step on the way, not the answer. Only the predicate counts ("is a
    fight song of the University of Kansas" says it is a song, not a university)."""
    return _names_kind(_predicate(text), described(form))


def predicate_describes(form: AnswerForm, text: str) -> bool:
    """Whether the predicate of `text` (a document's first sentence) names the kind the question asks for."""
    kinds = asks_for(form)
    return bool(kinds) and _names_kind(_predicate(text), kinds) is not None


def counted_in(form: AnswerForm, answer: str, sentence: str) -> bool:
    """Whether `sentence` writes `answer`, a number the question wants, as a count of something the question
    names: followed by a word of the question ("The default is 1000 tuples." for "how many inserted tuples
    ...?", "1024 bytes" for "How many bytes ...?"). A manual writes counts of a thousand or more without a
    comma, so such a number is no year there; a year that answers a count is followed by other words ("1959
    issue of Nugget" for "How many copies ... sold?")."""
    if form.wants != "number" or not answer.strip().isdigit():
        return False
    asked = {singular(word) for word in _WORD_PARTS.findall(form.question.casefold())} - _COUNT_LINKS
    after = re.compile(rf"(?<![\w.,]){re.escape(answer.strip())}\s+([^\W\d_]+)", re.IGNORECASE)
    return any(singular(found.casefold()) in asked for found in after.findall(sentence))


def type_of(form: AnswerForm) -> str | None:
    """The noun of an open question that asks "what type / kind / sort of NOUN" ("character" in "Which type of
    character is featured ...?"); None for any other question."""
    match = _TYPE_OF.search(form.question) if form.kind == "open" else None
    return match.group(1).lower() if match else None


def with_noun(form: AnswerForm, answer: str, sentence: str) -> str | None:
    """`answer` with the noun of a "what type of NOUN" question after it, as `sentence` writes the two together
    ("fictional character" of "a fictional character" for "fictional"): HotpotQA's answers to such questions
    name the kind with its noun ("fortnightly women interest magazine", "IT products and services"). None
    where the sentence does not write them together, or the answer holds the noun already."""
    noun = type_of(form)
    if noun is None:
        return None
    stem = singular(noun)
    if stem in _singular_words(answer):
        return None
    written = answer.strip()
    pattern = rf"(?<!\w){re.escape(written)}\s+({re.escape(stem)}(?:e?s)?)\b"
    match = re.search(pattern, sentence, re.IGNORECASE)
    return f"{written} {match.group(1)}" if match else None


def kind_asked(question: str) -> tuple[str, ...]:
    """Up to three words after the question's first which/what, up to the first that names no kind of thing or looks
    like a verb ("river" in "Which river flows through ...", "government position" in "What government position was
    held ...", "movie" in "Which movie was filmed first, A or B?", of any form); a capitalised word is a name, not a
    kind ("German" in "Which German project ..."), and is left out; () when it names none."""
    match = _ASKS_FOR.search(question)
    if match is None:
        return ()
    words = [group for group in match.groups() if group]
    following = question[match.end() :].split()[:1]
    kind: list[str] = []
    for position, word in enumerate(words):
        after = (words[position + 1 :] + following)[:1]
        if word.lower() in _NOT_A_KIND or (position and _looks_like_a_verb(word, after)):
            break
        if not word[0].isupper():
            kind.append(word.lower())
    return tuple(kind)


def _looks_like_a_verb(word: str, after: list[str]) -> bool:
    """A word ending in -s or -ed that an article or a preposition follows ("flows" in "Which river flows through
    ...", "hosted" in "What city hosted the ..."): a verb, not part of the kind asked for."""
    ends_like_a_verb = word.endswith("ed") or (word.endswith("s") and not word.endswith("ss"))
    return ends_like_a_verb and bool(after) and after[0].lower() in _VERB_OBJECTS


def _described(question: str, asks_for: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds of "the NOUN that ..." descriptions in `question`, and of the entity "What is the X of the NOUN
    ...?" asks something of, except one the question asks for (its kind is asked for, or the description follows
    "What is the name of", "Who is", ...)."""
    kinds = []
    for match in _DESCRIBED.finditer(question):
        kind = match.group(1)
        asked = kind in asks_for or _ASKS_FOR_DESCRIBED.match(question[: match.start()])
        if kind not in _NOT_A_KIND and not asked:
            kinds.append(kind)
    property_of = _PROPERTY_OF.match(question)
    if property_of is not None and property_of.group(1) not in _NAMES:
        kind = property_of.group(2)
        if kind not in _NOT_A_KIND and kind not in asks_for:
            kinds.append(kind)
    return tuple(dict.fromkeys(kinds))


def _own_words(text: str) -> str:
    """`text` (a first sentence) up to the end of its predicate, then only its words without a capital: what it says
    its subject is, without the names of the things it says the subject is in, of or near."""
    match = _PREDICATE.search(text)
    if match is None:
        return text
    rest = [word for word in text[match.end(1) :].split() if not word[:1].isupper()]
    return " ".join([text[: match.end(1)], *rest])


def _predicate(text: str) -> str:
    """What a first sentence says its subject is: the words after its first is / was / are / were, up to the first
    preposition, relative word or participle that begins what it is of, in, for, ... ("" when it has no such verb)."""
    match = _PREDICATE.search(text)
    return match.group(1) if match else ""


def _singular_words(text: str) -> set[str]:
    """The words of `text`, in lower case and their singular."""
    return {singular(word.lower()) for word in _WORD.findall(text)}


def _names_kind(text: str, kinds: tuple[str, ...]) -> str | None:
    """The first of `kinds` that `text` names, as written or in its singular, or by a word it is also called (each
    compared in its singular too, as the text's words are)."""
    words = _singular_words(text)
    for kind in kinds:
        one = singular(kind)
        if one in words or words.intersection(map(singular, _ALSO_CALLED.get(one, ()))):
            return kind
    return None


def names_kind(text: str, kinds: tuple[str, ...]) -> bool:
    """Whether `text` (a title and a first sentence) names one of `kinds`, or a word it is also called ("film" for
    "movie")."""
    return _names_kind(text, kinds) is not None


def singular(word: str) -> str:
    """A crude singular, enough to match "rivers" with "river" and "churches" with "church"; a word the same in
    both numbers ("series") or ending in -us or -is ("campus", "metropolis") is kept whole, not cut to "sery"."""
    if word in _SAME_IN_PLURAL or word.endswith(("us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word
