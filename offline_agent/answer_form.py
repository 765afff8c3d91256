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

An open question may also say what kind of thing it asks for (`wants`): a year or date ("In which year ...",
"When was ...", not a "When" that opens a clause before the question: "When a standby can't get WAL, how long does
it wait?"), or a number ("How many ...", "how much", "how old", ..., or "What was the population / number /
attendance ... of ...?"). An answer of that kind has a digit or a number word in it; verify.py refuses one that has
none ("Kansas" for "a population of how many inhabitants?"), and a number answered with a year ("1959" for "How
many copies ... sold?", "in 1978"), and a date with a bare number of one to three digits ("17"); on a step no check
sees, its grammar only offers answers of the kind asked. A question that asks when, not in what year
(`whole_date`), is answered with the date as written: verify.py answers a bare year with the one date the
sentences that give it write in full (`dates_with_year`: "1949" of "born April 1, 1949" is "April 1, 1949").
A date question may also name the event it dates (`event`: "founded" in "a special forces unit founded in what
year?", "born" in "When was X born?", "die" in "In which year did X die?"); verify.py refuses a year that no
sentence read gives for such an event (`dates_event`: "1945" from "Operation Cold Comfort was a failed SAS raid
that began ... on February 17, 1945", the raid's date, for the year the SAS was founded).
A "which/what NOUN" question names the kind of thing it asks for (`asks_for`: "river" in "Which river flows
through the birth city of James Joyce?"); verify.py refuses an answer whose own document does not say it is one
(Dublin, "the capital and largest city of Ireland", the first hop of that question). Words that name no kind of
thing ("What is", "which one", "what type of") ask for nothing in particular.
A yes/no question may ask one thing of two (`paired_subjects`: "Are both A and B X?", "Were A and B born in the
same year?"), and a choice may compare (`compares`: "older", "more", ...) or ask which option something holds
of ("Which writer was from England, A or B?"); verify.py judges those side by side. An open question may ask what
two things have in common (`shared_subjects`: "What occupation do A and B share?", "Where are A and B located?",
"A and B are both best known for what profession?"): its answer holds of both, and verify.py refuses one that
either thing's document does not say.
A question may ask for one part of a person's name (`name_part`: "first" for "What is the first name of ...?" or
"given name", "middle", "last" for "last name", "family name", "surname"; part_of_name reads it off a name).
Limits: English questions only; a question in another language is `open`, and wants nothing in particular.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from offline_agent.grounding import Grounding, OptionsGrounding

KINDS = ("open", "yes_no", "choice")

_AUXILIARIES = frozenset(
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
    rf"\b(?:what|which)\s+(?:year|date|decade|century)\b|^\W*when\s+(?:{'|'.join(sorted(_AUXILIARIES))})\b|\bwhen\W*$",
    re.IGNORECASE,
)
# A date question that asks for a year, a decade or a century, not for the date itself.
_IN_YEARS = re.compile(r"\b(?:what|which)\s+(?:year|decade|century)\b", re.IGNORECASE)
# "what type / kind / sort of NOUN": the noun an answer names a kind of.
_TYPE_OF = re.compile(r"\b(?:what|which)\s+(?:type|kind|sort)s?\s+of\s+([^\W\d_]+)", re.IGNORECASE)
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_KIND_WORD = r"([^\W\d_]+(?:-[^\W\d_]+)*)"
# "Which other film ...": "other" qualifies the kind asked for and is read past.
_ASKS_FOR = re.compile(
    rf"\b(?:which|what)\s+(?:(?:an)?other\s+)?{_KIND_WORD}(?:\s+{_KIND_WORD})?(?:\s+{_KIND_WORD})?", re.IGNORECASE
)
# After which/what: words that are not a kind of thing (verbs, articles, prepositions, generic nouns, properties);
# the kind asked for is read up to the first of them.
_NOT_A_KIND = frozenset(
    [*_AUXILIARIES, "the", "a", "an", "of", "in", "on", "at", "for", "from", "to", "by", "with", "that", "which"]
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
# "... uses another cost-limit setting. What is that setting's default?": "that" after a verb or a preposition
# points back to a thing the question described and did not name (after a noun it opens a clause: "the band that").
_REFERS_TO = re.compile(
    r"\b(?:is|was|are|were|does|do|did|makes?|uses?|has|have|of|in|on|for|from|by|with|to|at)\s+that\s+"
    r"(?:other\s+)?(?!(?:the|a|an|it|is|was|are|were|one)\b)([a-z][a-z-]*)\b",
    re.IGNORECASE,
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
# Words after a number that count nothing the question names ("1959 in", "2001 was").
_COUNT_LINKS = frozenset(
    ["in", "on", "at", "of", "and", "or", "the", "a", "an", "to", "by", "for", "as", "from", "with", "is", "was", "are"]
    + ["were", "be", "been", "has", "had", "have", "it", "its", "that", "which", "this", "there", "when"]
)
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
_WORD_PARTS = re.compile(r"[^\W\d_]+")
_NAME_PART = re.compile(r"\b(first|given|middle|last|family|sur)\s*name\b", re.IGNORECASE)
_PARTS = {"first": "first", "given": "first", "middle": "middle", "last": "last", "family": "last", "sur": "last"}
_NAME_WORDS = re.compile(r"[^\W\d_](?:\.|[\w'’-]*)")  # a word, or an initial with its full stop
_WHERE = re.compile(r"^\W*where\b", re.IGNORECASE)
# Kinds of place: a question that asks for one, or describes one on the way, is about a place.
_PLACES = frozenset(
    ["place", "city", "town", "village", "county", "state", "country", "region", "province", "district", "suburb"]
    + ["borough", "municipality", "community", "neighborhood", "neighbourhood", "island", "commune", "parish"]
)
_ASKS_WHO = re.compile(r"^\W*(?:who|whom|whose)\b", re.IGNORECASE)
# A name of capitalised words and initials, then a possessive and a quoted title or a common noun: "J. R. R.
# Tolkien's "The Lord of the Rings"", "Tolkien's novel"; not a name that holds one ("McDonald's Corporation").
_POSSESSIVE = re.compile(r"((?:[A-Z][\w.-]*\s+)*[A-Z][\w.-]*)['’]s\s+[\"“'‘a-z]")
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|billion|dozen|first|second|third|fourth|fifth)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AnswerForm:
    """The form of one question's answer: its kind, and the question (the source of a choice's options)."""

    kind: str
    question: str
    yes_no: bool
    wants: str | None = None  # "date" or "number": what an open question asks for, when it says
    asks_for: tuple[str, ...] = ()  # the words of "which/what NOUN" naming the kind of thing asked for
    options: tuple[str, ...] = ()  # a choice's options, where choice_options finds them
    described: tuple[str, ...] = ()  # kinds of the entities "the NOUN that ..." describes on the way to the answer
    event: str | None = None  # the verb of the event a date question dates ("founded", "born", "die"), if it names one
    name_part: str | None = None  # "first", "middle" or "last": the part of a person's name the question asks for
    refers_to: str | None = None  # the noun of "that NOUN", a thing the question described before and does not name

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

    def counted_in(self, answer: str, sentence: str) -> bool:
        """Whether `sentence` writes `answer`, a number the question wants, as a count of something the question
        names: followed by a word of the question ("The default is 1000 tuples." for "how many inserted tuples
        ...?", "1024 bytes" for "How many bytes ...?"). A manual writes counts of a thousand or more without a
        comma, so such a number is no year there; a year that answers a count is followed by other words ("1959
        issue of Nugget" for "How many copies ... sold?")."""
        if self.wants != "number" or not answer.strip().isdigit():
            return False
        asked = {singular(word) for word in _WORD_PARTS.findall(self.question.casefold())} - _COUNT_LINKS
        after = re.compile(rf"(?<![\w.,]){re.escape(answer.strip())}\s+([^\W\d_]+)", re.IGNORECASE)
        return any(singular(found.casefold()) in asked for found in after.findall(sentence))

    @property
    def type_of(self) -> str | None:
        """The noun of an open question that asks "what type / kind / sort of NOUN" ("character" in "Which type of
        character is featured ...?"); None for any other question."""
        match = _TYPE_OF.search(self.question) if self.kind == "open" else None
        return match.group(1).lower() if match else None

    def with_noun(self, answer: str, sentence: str) -> str | None:
        """`answer` with the noun of a "what type of NOUN" question after it, as `sentence` writes the two together
        ("fictional character" of "a fictional character" for "fictional"): HotpotQA's answers to such questions
        name the kind with its noun ("fortnightly women interest magazine", "IT products and services"). None
        where the sentence does not write them together, or the answer holds the noun already."""
        noun = self.type_of
        if noun is None:
            return None
        stem = singular(noun)
        if stem in _singular_words(answer):
            return None
        written = answer.strip()
        pattern = rf"(?<!\w){re.escape(written)}\s+({re.escape(stem)}(?:e?s)?)\b"
        match = re.search(pattern, sentence, re.IGNORECASE)
        return f"{written} {match.group(1)}" if match else None

    @property
    def referring_sentence(self) -> str | None:
        """The sentence of the question that refers to "that NOUN" (`refers_to`), which says what it asks about the
        thing ("What is that setting's default value?"); None where the question refers to nothing it does not name."""
        if self.refers_to is None:
            return None
        sentences = re.split(r"(?<=[.?!])\s+", self.question.strip())
        return next((sentence for sentence in sentences if _REFERS_TO.search(sentence)), self.question)

    def asked_of(self, name: str) -> str | None:
        """The question's sentence that refers to "that NOUN" asked of `name` ("What is vacuum_cost_limit's default
        value?" of "What is that setting's default value?"); None where the question refers to nothing."""
        sentence = self.referring_sentence
        if sentence is None or self.refers_to is None:
            return None
        that = rf"\bthat\s+(?:other\s+)?{re.escape(self.refers_to)}\b"
        return re.sub(that, lambda _: name, sentence, count=1, flags=re.IGNORECASE)

    @property
    def whole_date(self) -> bool:
        """Whether the question asks when something was ("When was X born?", "... a civil war that ended when?"),
        not in what year, decade or century: its answer is the date as the documents write it ("April 1, 1949")."""
        return self.wants == "date" and not _IN_YEARS.search(self.question)

    def describes(self, text: str) -> bool:
        """Whether `text` (a document's first sentence) names the kind of thing the question asks for, a plural
        or singular of one of its words (always, when it asks for nothing in particular). Past its predicate, a
        capitalised word is part of another thing's name: "McLean is a census-designated place in Fairfax
        County" does not say McLean is a county."""
        return not self.asks_for or _names_kind(_own_words(text), self.asks_for) is not None

    def dates_event(self, sentence: str, answer: str) -> bool:
        """Whether `sentence`, which holds `answer`, dates the event the question asks about (always, when it names
        none): it has a word of the event's family ("established" for "founded"), or another form of the question's
        own verb ("elect" for "elected"); a birth or death may also be dated by a life's span ("(1927–2013)")."""
        if self.event is None:
            return True
        family = _EVENTS.get(self.event)
        stems = _EVENT_FAMILIES[family] if family else (_stem(self.event),)
        if re.search(r"(?<!\w)(?:" + "|".join(re.escape(stem) for stem in stems) + ")", sentence, re.IGNORECASE):
            return True
        year = re.escape(answer.strip())
        span = {"born": rf"{year}[^()–-]{{0,3}}[–-]", "died": rf"[–-][^()–-]{{0,20}}{year}"}.get(family or "")
        return span is not None and re.search(span, sentence) is not None

    @property
    def about_a_place(self) -> bool:
        """Whether the question asks where, or for a place, or describes one on the way ("what county", "the city
        where ..."): then an answer may name a document titled with its region ("McLean, Virginia")."""
        kinds = {singular(kind) for kind in (*self.asks_for, *self.described)}
        return bool(kinds & _PLACES) or bool(_WHERE.match(self.question))

    def owner(self, answer: str) -> str | None:
        """The name before a possessive that opens `answer`, where the question asks who ("J. R. R. Tolkien" of
        'J. R. R. Tolkien's "The Lord of the Rings", following ...' for "Who wrote the book that ...?"): the answer
        named the person's work, not the person. None for any other answer or question."""
        if not _ASKS_WHO.match(self.question):
            return None
        match = _POSSESSIVE.match(answer.strip())
        return match.group(1) if match else None

    def description_in(self, text: str) -> str | None:
        """The kind of a described entity (`described`) that `text` (a document's first sentence) says its subject
        is, if any: then the document is about a step on the way, not the answer. Only the predicate counts ("is a
        fight song of the University of Kansas" says it is a song, not a university)."""
        return _names_kind(_predicate(text), self.described)

    def predicate_describes(self, text: str) -> bool:
        """Whether the predicate of `text` (a document's first sentence) names the kind the question asks for."""
        return bool(self.asks_for) and _names_kind(_predicate(text), self.asks_for) is not None

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
    if first in _AUXILIARIES:
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
    asks_for = () if wants else _kind_asked(question)
    described = _described(question, asks_for)
    event = _event_asked(question) if wants == "date" else None
    part = name_part(question)
    refers = _REFERS_TO.search(question)
    return AnswerForm(
        "open",
        question,
        yes_no=False,
        wants=wants,
        asks_for=asks_for,
        described=described,
        event=event,
        name_part=part,
        refers_to=refers.group(1).lower() if refers is not None else None,
    )


def name_part(question: str) -> str | None:
    """The part of a person's name the question asks for: "first" ("What is the first name of ...?", "given
    name"), "middle", or "last" ("last name", "family name", "surname"); None where it asks for no part of one."""
    found = _NAME_PART.search(question)
    return _PARTS[found.group(1).lower()] if found is not None else None


def part_of_name(name: str, part: str) -> str | None:
    """The `part` ("first", "middle", "last") of a person's name as written: its first word, the words between its
    first and last, or its last; a nickname in quotes or brackets is no part ("Lester" of 'Lester Ben "Benny"
    Binion'). None where the name has no such part (a middle name of two words, or one word)."""
    words = _NAME_WORDS.findall(re.sub(r'"[^"]*"|“[^”]*”|\([^)]*\)', " ", name))
    if len(words) < 2:
        return None
    if part == "middle":
        return " ".join(words[1:-1]) or None
    return words[0] if part == "first" else words[-1]


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


def _kind_asked(question: str) -> tuple[str, ...]:
    """Up to three words after the question's first which/what, up to the first that names no kind of thing or looks
    like a verb ("river" in "Which river flows through ...", "government position" in "What government position was
    held ..."); a capitalised word is a name, not a kind ("German" in "Which German project ..."), and is left out."""
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


# Nouns whose plural is the singular: the rules of singular would cut "series" to "sery", and a document that says
# it is "a television series" would not be the show a question asks for.
_SAME_IN_PLURAL = frozenset(["series", "species", "news", "means", "headquarters", "crossroads"])


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


def dates_with_year(year: str, sentence: str) -> list[str]:
    """The dates `sentence` writes in full with `year` ("21 March 1963", "April 1, 1949", "October 1922"), in
    order."""
    year = re.escape(year.strip())
    pattern = rf"\b(?:\d{{1,2}}\s+{_MONTH}|{_MONTH}(?:\s+\d{{1,2}},?)?)\s+{year}\b"
    return [found.group(0) for found in re.finditer(pattern, sentence)]


def kind_asked(question: str) -> tuple[str, ...]:
    """The kind of thing a which/what question names, of any form ("movie" in "Which movie was filmed first, A or
    B?"); () when it names none."""
    return _kind_asked(question)


def names_kind(text: str, kinds: tuple[str, ...]) -> bool:
    """Whether `text` (a title and a first sentence) names one of `kinds`, or a word it is also called ("film" for
    "movie")."""
    return _names_kind(text, kinds) is not None


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


def paired_subjects(question: str) -> tuple[str, str, str] | None:
    """The two things a yes/no question asks one thing about, and how: ("both", A, B) for "Are both A and B X?" and
    "Are A and B both X?" (X must hold of each), ("same", A, B) for "Were A and B born in the same year?"; None
    for any other question. A and B are the question's text around its first "and" (or "or", as in "Are both A or
    B X?"): the first ends at it, the second runs on to "both" or to the end, so it may carry the rest of the
    question ("Affiliated Managers Group based in Massachusetts"); the caller finds the name it opens with."""
    words = question.split()
    if len(words) < 4 or words[0].lower() not in _AUXILIARIES:
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
    the question is open is the caller's to know (answer_form)."""
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


def _bare_option(text: str) -> str:
    return _without_article(text).strip("\"'“”‘’ ")


def _without_article(text: str) -> str:
    """`text`, stripped, without an article that opens it ("the Governor": "Governor")."""
    return re.sub(r"^(?:the|a|an)\s+", "", text.strip(), flags=re.IGNORECASE)


def in_question(answer: str, question: str) -> bool:
    """True if `answer`, normalised as HotpotQA does, is a run of whole words of the question (whose dashes and
    slashes may also part words; a long word may differ by a letter, `_near`); not when it is a name that ends in
    the kind of thing the question asks for and is written right after its which/what: "Hawaii County" answers
    "... is in what Hawaii county?" (but "Gator Country" is in "What Gator Country guitarist ...?")."""
    from offline_agent.normalize import normalize_answer

    if _names_the_kind_asked(answer.strip(), question):
        return False
    needle = normalize_answer(answer).split()
    # Also with the question's dashes and slashes as spaces: "2014" is in "the 2014–15 season", which normalises
    # to "201415".
    split = re.sub(r"[-‐‑–—/]", " ", question)
    for text in (question, split):
        words = normalize_answer(text).split()
        runs = (words[start : start + len(needle)] for start in range(len(words) - len(needle) + 1))
        if needle and any(all(map(_near, needle, run)) for run in runs):
            return True
    return False


def _near(word: str, other: str) -> bool:
    """Whether two words are the same but for one letter added, left out, changed or swapped with the next, in words
    of six letters or more: a question's typing ("Muhummad Ali", "consitutional") or number ("magazines") does
    not make its words another answer's."""
    if word == other:
        return True
    if min(len(word), len(other)) < 6 or abs(len(word) - len(other)) > 1:
        return False
    short, long = sorted((word, other), key=len)
    if len(short) < len(long):
        return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
    differ = [i for i, (a, b) in enumerate(zip(word, other, strict=True)) if a != b]
    swapped = len(differ) == 2 and differ[1] == differ[0] + 1 and word[differ[0]] == other[differ[1]]
    return len(differ) == 1 or (swapped and word[differ[1]] == other[differ[0]])


def _names_the_kind_asked(answer: str, question: str) -> bool:
    """Whether `answer` is a name (a capital letter in it) whose last word is the kind the question asks for, and the
    question writes it right after which/what ("what Hawaii county?", "what New York city?")."""
    words = answer.split()
    if not words or not re.search(r"[A-Z]", answer) or words[-1].lower() not in _kind_asked(question):
        return False
    return re.search(rf"\b(?:which|what)\s+{re.escape(answer)}(?!\w)", question, re.IGNORECASE) is not None


__all__ = [
    "KINDS",
    "AnswerForm",
    "answer_form",
    "choice_options",
    "compares",
    "dates_with_year",
    "in_question",
    "kind_asked",
    "name_part",
    "names_kind",
    "paired_subjects",
    "part_of_name",
    "reads_as_year",
    "same_what",
    "shared_subjects",
]
