"""Grounded answers: the Final of a step may only be a span of what the run has read, or yes / no.

Why: a small model that has read that a play is by a certain playwright will happily write the playwright's
birth year from memory. With grounding on, the Final line's grammar is rebuilt before each step from the evidence
so far (the question and every Observation): an answer the run never read cannot be written, so the model has to
search on, and an answer comes out in the form the evidence gives it ("River Liffey", "4 March 1932").

What counts as a span: the text is cut into sentences (a span never crosses one) and each sentence into tokens (words,
with internal hyphens, apostrophes and full stops, as in "Jean-Paul", "O'Brien", "U.S", and with the one or two hyphens
that open a command-line option or a negative number after a space, "-e", "--extension", "-1"; every other non-space
character is a token of its own). A span is a run of consecutive tokens of one sentence that starts and ends on a word,
written with the spacing of the source ("Dublin, Ireland"), and holds no copula: the lower-case words "is", "was", "are"
and "were" cut a sentence as its end does (`CLAUSE_ENDS`), so "Teen Titans Go! is an American animated television
series" gives "Teen Titans Go!" and "an American animated television series", not the clause. Written out, the 1.5B
model ran on from a name into its sentence's predicate (6 Finals of the HotpotQA and sample runs, all wrong), and no
gold answer of either holds a copula; a title's "Is" has a capital and stays. Every span of every sentence is accepted,
at any length; `yes` and `no` (either case) always are.

How: the tokens of all sentences go into one word-level suffix automaton (a sentence ends in a symbol of its own,
so no path crosses sentences). Every path from its start is a span, so the GBNF is one rule per state: a token,
then optionally the rules of the state it leads to. That is at most twice as many rules as tokens, however much
was read, and the automaton grows as Observations arrive, so each step adds only its new text.

`Grounding.accepts` decides the same language in Python by walking the automaton; the Lark grammar leaves the
Final line free and the parser asks `accepts` (a Lark grammar of thousands of rules per step would cost far more
than the check). Tests hold the two to each other.

Excluded answers (`exclude`): an answer the verify strategy refused as wrong (it repeats the question, is a hop on
the way, is not the kind of thing asked for, loses a comparison) may not be written afterwards, nor any span that
begins with it or that it begins with ("Shirley Temple" excludes "Shirley" and "Shirley Temple Black", not
"Shirley Jackson"), nor one whose last word it extends into a longer word ("Dublin" excludes "Dubliners": a model
that writes the refused "Dublin" again is otherwise led on into "Dubliners", where the token that ends "Dublin" in
the model's vocabulary leaves only "ers" to write, and jump-forward writes it without asking the model). On the
automaton: the edges of its last token and of the words that extend it are left out, and the edges of its other
tokens may not end a span. A 1.5B model told why its answer is wrong most often writes it again; now it cannot, and
picks the next best span. Limit: a state of the automaton stands for several strings (a suffix of the answer that
only ever occurs inside it, "Temple" in "Shirley Temple"), and those lose the same edges; an exclusion that would
leave no answer at all is ignored. A yes/no answer is excluded as a word: "Yes" takes out "yes" and "Yes", and
the other word stays (verify.py's `sides` and `same` checks refuse one answer of a yes/no question, which leaves
the other); excluding both is ignored.

A part of the language (`spans`): the answers of a few tokens that a rule accepts, listed in the order read, for a
step that may only write those (verify.py: a number question's last step, which no check sees, offers the spans
read that hold a number).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from offline_agent.listing import entries
from offline_agent.literals import quoted
from offline_agent.retrieval.sentences import split_sentences

# A word: letters or digits, joined across ' ’ - . inside it, and opened by one or two hyphens where a space, a
# bracket or a quote comes before them (an option "-e", "--extension"; a negative number "-1"); anything else that
# is not a space is a token alone.
_TOKEN = re.compile(r"(\s*)((?:(?<![^\s(\[\"“'‘])-{1,2})?[^\W_]+(?:['’.\-][^\W_]+)*|\S)")
YES_NO = ("yes", "no", "Yes", "No")
ARTICLES = ("the", "a", "an")  # what HotpotQA's answer normalisation drops
# Words no span holds: they end the clause of a name and begin its predicate ("X is a ...").
CLAUSE_ENDS = frozenset(["is", "was", "are", "were"])


@dataclass(frozen=True)
class _Symbol:
    """One token as it appears in a sentence: its text and whether a space comes before it."""

    text: str
    spaced: bool
    is_word: bool


def _extends(candidate: object, last: _Symbol) -> bool:
    """Whether `candidate` (an edge of the automaton) is the word `last` or a longer word that begins with it, case
    aside ("Dubliners" extends "Dublin", "Magazine" is "magazine")."""
    return (
        isinstance(candidate, _Symbol)
        and candidate.is_word
        and candidate.text.casefold().startswith(last.text.casefold())
    )


def _written(symbols: list[_Symbol]) -> str:
    """A span as the text it comes from writes it: its first token with no space before it."""
    return "".join((" " if symbol.spaced and at else "") + symbol.text for at, symbol in enumerate(symbols))


def tokens(text: str) -> list[_Symbol]:
    """The tokens of `text`, each with whether whitespace preceded it."""
    out = []
    for match in _TOKEN.finditer(text):
        piece = match.group(2)
        out.append(_Symbol(piece, bool(match.group(1)), piece.lstrip("-")[:1].isalnum()))
    return out


def _pieces(text: str) -> list[str]:
    """`text` cut before and after each `[n] Title: ` head (listing.py): titles and texts as separate pieces."""
    pieces, at = [], 0
    for entry in entries(text):
        if entry.label is None:
            continue
        pieces += [text[at : entry.start], entry.label]
        at = entry.text_start
    return [*pieces, text[at:]]


@dataclass
class _State:
    length: int = 0
    link: int = -1
    next: dict[object, int] = field(default_factory=dict)


class Grounding:
    """The spans of everything read so far, as a suffix automaton over tokens; grows with `add`."""

    def __init__(self, texts: Iterable[str] = (), *, yes_no: bool = True) -> None:
        self.yes_no = yes_no  # whether `yes` and `no` are answers whatever was read
        self._refused_words: set[str] = set()  # "yes" or "no", excluded (lower case)
        self._states = [_State()]
        self._last = 0
        self._sentences = 0
        self._ends = 0  # separators written: one after each sentence, and one for each copula in it
        self._excluded: list[list[_Symbol]] = []
        self._clauses: list[list[_Symbol]] = []  # the token runs spans are cut from, as read (for `spans`)
        self._digest = hashlib.sha256()
        for text in texts:
            self.add(text)

    def __len__(self) -> int:
        """Sentences read so far."""
        return self._sentences

    @property
    def is_empty(self) -> bool:
        """True when no answer at all is allowed yet (no span read, and yes/no not allowed)."""
        return not self.yes_no and not self._sentences

    @property
    def sha256(self) -> str:
        return self._digest.copy().hexdigest()

    def add(self, text: str) -> None:
        """Read `text`: each of its sentences becomes a source of spans.

        A line in the search tool's form, `[n] Title: text`, gives its title and its text separately, so a span
        never runs from a title into the passage ("Edgar Kaiser Sr.: Edgar Fosburgh Kaiser ...").
        """
        self._digest.update(text.encode("utf-8") + b"\0")
        for piece in _pieces(text):
            self._add_sentences(piece)

    def exclude(self, answer: str) -> None:
        """From now on, no answer may be `answer`, begin with it, or be a beginning of it; "yes" or "no" takes out
        that word, in either case, while the other is left (an answer of no words is never excluded)."""
        answer = answer.strip()
        symbols = tokens(answer)
        if answer in YES_NO:
            self._exclude_word(answer.lower())
            return
        if not symbols or not symbols[0].is_word or not symbols[-1].is_word:
            return
        self._digest.update(b"\0exclude\0" + answer.encode("utf-8") + b"\0")
        self._excluded.append(symbols)

    def _exclude_word(self, word: str) -> None:
        """Take `word` ("yes" or "no") out of the answers, unless the other one is out already."""
        if self.yes_no and not self._refused_words:
            self._digest.update(b"\0exclude\0" + word.encode("utf-8") + b"\0")
            self._refused_words.add(word)

    def yes_no_words(self) -> list[str]:
        """The yes/no answers allowed now, as written ("yes", "no", "Yes", "No"), less any excluded."""
        return [word for word in YES_NO if self.yes_no and word.lower() not in self._refused_words]

    def _edges(self) -> _Edges:
        """What the excluded answers take out of the automaton as it is now: the edge of each one's last token
        and of every word that extends it (`cut`), and the edges of its other tokens, which may not end a span
        (`through`); case aside (the model wrote "Magazine" from another sentence after "magazine" was refused),
        after an article too, and with the first token written with or without a space before it; and a yes or no
        read that is not an answer now (`_yes_no_read`). Empty when that would leave no answer."""
        edges = _Edges()
        for symbols in [*self._excluded, *self._with_articles()]:
            frontier = {0}
            for position, symbol in enumerate(symbols):
                last = position == len(symbols) - 1
                reached: set[int] = set()
                for state in frontier:
                    for candidate, target in self._states[state].next.items():
                        if not isinstance(candidate, _Symbol) or (position and candidate.spaced != symbol.spaced):
                            continue
                        if last and _extends(candidate, symbol):
                            edges.cut.add((state, candidate))
                        elif not last and candidate.text.casefold() == symbol.text.casefold():
                            if candidate.is_word:
                                edges.through.add((state, candidate))
                            reached.add(target)
                frontier = reached
        self._yes_no_read(edges)
        if edges and not self.yes_no and not self._alternatives_left(edges):
            return _Edges()
        return edges

    def _yes_no_read(self, edges: _Edges) -> None:
        """A yes or no that is not an answer now (an open question's, or one refused) may begin a span but not be
        one, though a sentence read has the word ("There is currently no New Zealand championship"): the answer
        form's rule holds for a word read as for one written."""
        allowed = self.yes_no_words()
        for word in (word for word in YES_NO if word not in allowed):
            for symbol in (_Symbol(word, False, True), _Symbol(word, True, True)):
                if symbol in self._states[0].next:
                    edges.through.add((0, symbol))

    def _with_articles(self) -> list[list[_Symbol]]:
        """Each excluded answer that does not begin with an article, after one ("The America East Conference"
        for "America East Conference"): HotpotQA's scoring and the checks read the two as one answer."""
        return [
            [_Symbol(article, False, True), _Symbol(symbols[0].text, True, True), *symbols[1:]]
            for symbols in self._excluded
            if symbols[0].text.casefold() not in ARTICLES
            for article in ARTICLES
        ]

    def _alternatives_left(self, edges: _Edges) -> bool:
        """Whether any answer is left past `edges`. A first word they leave untouched is one, alone; only when
        every first word is cut or must go on does it take the walk over all states (`_alive`)."""
        firsts = [(s, target) for s, target in self._states[0].next.items() if isinstance(s, _Symbol) and s.is_word]
        if any(edges.may_end(0, symbol, target, set()) for symbol, target in firsts):
            return True
        alive = self._alive(edges)
        return any(edges.may_end(0, symbol, target, alive) for symbol, target in firsts)

    def spans(self, fits: Callable[[str], bool], most: int) -> list[str]:
        """The answers of at most `most` tokens that `fits` accepts and this grounding does (exclusions honoured),
        each once, in the order read: the part of the language a step may be narrowed to (verify.py: a number
        question's answers that hold a number)."""
        found: dict[str, None] = {}
        for clause in self._clauses:
            for start, first in enumerate(clause):
                if not first.is_word:
                    continue
                for end in range(start, min(start + most, len(clause))):
                    if clause[end].is_word:
                        found.setdefault(_written(clause[start : end + 1]), None)
        edges = self._edges()
        return [span for span in found if fits(span) and self._accepts(span, edges)]

    def _add_sentences(self, text: str) -> None:
        for start, end in split_sentences(text):
            symbols = tokens(text[start:end])
            if not any(symbol.is_word for symbol in symbols):
                continue
            clause: list[_Symbol] = []
            for symbol in symbols:
                if symbol.is_word and symbol.text in CLAUSE_ENDS:
                    self._end_span()
                    self._clauses.append(clause)
                    clause = []
                else:
                    self._extend(symbol)
                    clause.append(symbol)
            self._end_span()
            self._clauses.append(clause)
            self._sentences += 1

    def _end_span(self) -> None:
        """Write a separator no other place shares: no span crosses it."""
        self._extend(("end", self._ends))
        self._ends += 1

    def _extend(self, symbol: object) -> None:
        """The suffix-automaton step (one symbol appended to the text read so far)."""
        states = self._states
        current = len(states)
        states.append(_State(length=states[self._last].length + 1))
        p = self._last
        while p != -1 and symbol not in states[p].next:
            states[p].next[symbol] = current
            p = states[p].link
        if p == -1:
            states[current].link = 0
        else:
            q = states[p].next[symbol]
            if states[p].length + 1 == states[q].length:
                states[current].link = q
            else:
                clone = len(states)
                states.append(_State(states[p].length + 1, states[q].link, dict(states[q].next)))
                while p != -1 and states[p].next.get(symbol) == q:
                    states[p].next[symbol] = clone
                    p = states[p].link
                states[q].link = clone
                states[current].link = clone
        self._last = current

    # --- the language, decided in Python ----------------------------------------------------------------------

    def accepts(self, answer: str) -> bool:
        """True if `answer` is a span of one sentence read so far (starting and ending on a word), or yes/no when
        those are allowed."""
        answer = answer.strip()
        if answer in self.yes_no_words():
            return True
        return self._accepts(answer, self._edges())

    def _accepts(self, answer: str, edges: _Edges) -> bool:
        """`accepts` for a span, with the excluded answers' `edges` worked out once by the caller."""
        symbols = tokens(answer)
        if not symbols or not symbols[0].is_word or not symbols[-1].is_word:
            return False
        first = symbols[0]
        for spaced in (False, True):  # a span's first token is written without the space before it
            state: int | None = 0
            edge = None
            for symbol in [_Symbol(first.text, spaced, True), *symbols[1:]]:
                if state is None or (state, symbol) in edges.cut:
                    state = None
                    break
                edge = (state, symbol)
                state = self._states[state].next.get(symbol)
            if state is not None and edge not in edges.through:
                return True
        return False

    # --- the language, as GBNF ----------------------------------------------------------------------------------

    def gbnf_rules(self, prefix: str) -> tuple[str, list[tuple[str, str]]]:
        """(the start rule's name, every rule as (name, body)) of the GBNF for this language; names begin `prefix`."""
        states = self._states
        edges = self._edges()
        alive = self._alive(edges)
        rules: list[tuple[str, str]] = []
        names: dict[int, str] = {}

        def name(state: int) -> str:
            if state not in names:
                names[state] = f"{prefix}{len(names)}"
            return names[state]

        def alternatives(state: int, first: bool) -> list[str]:
            seen: set[str] = set()
            out = []
            for symbol, target in states[state].next.items():
                if not isinstance(symbol, _Symbol) or (first and not symbol.is_word) or (state, symbol) in edges.cut:
                    continue
                text = symbol.text if first or not symbol.spaced else " " + symbol.text
                if symbol.is_word and (state, symbol) in edges.through:  # the span must go on past this word
                    if target not in alive:
                        continue
                    rest = f" {name(target)}"
                elif symbol.is_word:
                    rest = f" ({name(target)})?" if target in alive else ""
                elif target in alive:
                    rest = f" {name(target)}"
                else:
                    continue
                choice = _literal(text) + rest
                if choice not in seen:
                    seen.add(choice)
                    out.append(choice)
            return out

        start = f"{prefix}start"
        spans = alternatives(0, first=True)
        answers = [*(_literal(word) for word in self.yes_no_words()), *spans]
        if not answers:
            raise ValueError("an empty grounding has no answer to write: check is_empty first")
        rules.append((start, " | ".join(answers)))
        done: set[int] = set()
        while len(done) < len(names):
            for state in [s for s in names if s not in done]:
                done.add(state)
                rules.append((names[state], " | ".join(alternatives(state, first=False))))
        return start, rules

    def _alive(self, edges: _Edges | None = None) -> set[int]:
        """States from which the span can still end on a word (without the edges excluded answers take out):
        they get a rule of their own."""
        edges = edges or _Edges()
        states = self._states
        alive: set[int] = set()
        changed = True
        while changed:
            changed = False
            for index, state in enumerate(states):
                if index in alive:
                    continue
                for symbol, target in state.next.items():
                    if isinstance(symbol, _Symbol) and edges.may_end(index, symbol, target, alive):
                        alive.add(index)
                        changed = True
                        break
        alive.discard(0)
        return alive


class OptionsGrounding(Grounding):
    """A choice question's answers: its options, whole, as the question writes them or with a capital first letter
    ("radium", "Radium"; a document names it so), and yes/no where the question allows them. Nothing read is added (a
    choice is answered with an option, not with what a search returned); `exclude` takes an option out while
    another answer is left. With `capitals=False` the options are only as given (spans a step was narrowed to,
    `Grounding.spans`, which were read as they are)."""

    def __init__(self, options: Iterable[str], *, yes_no: bool = False, capitals: bool = True) -> None:
        super().__init__((), yes_no=yes_no)
        self.options: list[str] = []
        for option in options:
            option = " ".join(option.split())
            for written in (option, option[:1].upper() + option[1:]) if capitals else (option,):
                if written and written not in self.options:
                    self.options.append(written)
        self._digest.update(("\0options\0" + "\0".join(self.options)).encode("utf-8"))

    def __len__(self) -> int:
        return len(self.options)

    @property
    def is_empty(self) -> bool:
        return not self.yes_no and not self.options

    def add(self, text: str) -> None:
        """A choice's answers do not grow with what is read."""

    def exclude(self, answer: str) -> None:
        if answer.strip() in YES_NO:
            self._exclude_word(answer.strip().lower())
            return
        left = [option for option in self.options if option.lower() != " ".join(answer.split()).lower()]
        if left != self.options and (left or self.yes_no):
            self._digest.update(b"\0exclude\0" + answer.strip().encode("utf-8") + b"\0")
            self.options = left

    def accepts(self, answer: str) -> bool:
        answer = answer.strip()
        return answer in self.yes_no_words() or answer in self.options

    def spans(self, fits: Callable[[str], bool], most: int) -> list[str]:
        return [option for option in self.options if len(tokens(option)) <= most and fits(option)]

    def gbnf_rules(self, prefix: str) -> tuple[str, list[tuple[str, str]]]:
        answers = [*self.yes_no_words(), *self.options]
        if not answers:
            raise ValueError("an empty grounding has no answer to write: check is_empty first")
        start = f"{prefix}start"
        return start, [(start, " | ".join(_literal(answer) for answer in answers))]


def _literal(text: str) -> str:
    """A span as a grammar literal: read text may hold any character (an ANSI-coloured log holds ESC and BEL)."""
    return quoted(text)


@dataclass
class _Edges:
    """Edges of the automaton that excluded answers (and a yes or no not allowed) take out: `cut` (never taken)
    and `through` (taken only if the span goes on after them)."""

    cut: set[tuple[int, _Symbol]] = field(default_factory=set)
    through: set[tuple[int, _Symbol]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.cut or self.through)

    def may_end(self, state: int, symbol: _Symbol, target: int, alive: set[int]) -> bool:
        """Whether a span can go from `state` over `symbol` and end, there or later."""
        if (state, symbol) in self.cut:
            return False
        if symbol.is_word and (state, symbol) not in self.through:
            return True
        return target in alive


__all__ = ["YES_NO", "Grounding", "OptionsGrounding", "tokens"]
