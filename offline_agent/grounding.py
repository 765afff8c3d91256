"""Grounded answers: the Final of a step may only be a span of what the run has read, or yes / no.

Why: a small model that has read that a play is by a certain playwright will happily write the playwright's
birth year from memory. With grounding on, the Final line's grammar is rebuilt before each step from the evidence
so far (the question and every Observation): an answer the run never read cannot be written, so the model has to
search on, and an answer comes out in the form the evidence gives it ("River Liffey", "4 March 1932").

What counts as a span: the text is cut into sentences (a span never crosses one) and each sentence into tokens
(words, with internal hyphens, apostrophes and full stops, as in "Jean-Paul", "O'Brien", "U.S"; every other
non-space character is a token of its own). A span is a run of consecutive tokens of one sentence that starts and
ends on a word, written with the spacing of the source ("Dublin, Ireland"). Every span of every sentence is
accepted, at any length; `yes` and `no` (either case) always are.

How: the tokens of all sentences go into one word-level suffix automaton (a sentence ends in a symbol of its own,
so no path crosses sentences). Every path from its start is a span, so the GBNF is one rule per state: a token,
then optionally the rules of the state it leads to. That is at most twice as many rules as tokens, however much
was read, and the automaton grows as Observations arrive, so each step adds only its new text.

`Grounding.accepts` decides the same language in Python by walking the automaton; the Lark grammar leaves the
Final line free and the parser asks `accepts` (a Lark grammar of thousands of rules per step would cost far more
than the check). Tests hold the two to each other.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from offline_agent.retrieval.sentences import split_sentences

# A word: letters or digits, joined across ' ’ - . inside it; anything else that is not a space is a token alone.
_TOKEN = re.compile(r"(\s*)([^\W_]+(?:['’.\-][^\W_]+)*|\S)")
YES_NO = ("yes", "no", "Yes", "No")


@dataclass(frozen=True)
class _Symbol:
    """One token as it appears in a sentence: its text and whether a space comes before it."""

    text: str
    spaced: bool
    is_word: bool


def tokens(text: str) -> list[_Symbol]:
    """The tokens of `text`, each with whether whitespace preceded it."""
    out = []
    for match in _TOKEN.finditer(text):
        piece = match.group(2)
        out.append(_Symbol(piece, bool(match.group(1)), piece[0].isalnum()))
    return out


_LISTED = re.compile(r"^\[\d+\] ([^\n]{1,300}?): ", re.MULTILINE)


def _pieces(text: str) -> list[str]:
    """`text` cut before and after each `[n] Title: ` head: titles and texts as separate pieces."""
    pieces, at = [], 0
    for match in _LISTED.finditer(text):
        pieces += [text[at : match.start()], match.group(1)]
        at = match.end()
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
        self._states = [_State()]
        self._last = 0
        self._sentences = 0
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

    def _add_sentences(self, text: str) -> None:
        for start, end in split_sentences(text):
            symbols = tokens(text[start:end])
            if not any(symbol.is_word for symbol in symbols):
                continue
            for symbol in symbols:
                self._extend(symbol)
            self._extend(("end", self._sentences))  # a separator no other sentence shares
            self._sentences += 1

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
        if answer in YES_NO and self.yes_no:
            return True
        symbols = tokens(answer)
        if not symbols or not symbols[0].is_word or not symbols[-1].is_word:
            return False
        first = symbols[0]
        for spaced in (False, True):  # a span's first token is written without the space before it
            state = self._states[0].next.get(_Symbol(first.text, spaced, True))
            for symbol in symbols[1:]:
                if state is None:
                    break
                state = self._states[state].next.get(symbol)
            if state is not None:
                return True
        return False

    # --- the language, as GBNF ----------------------------------------------------------------------------------

    def gbnf_rules(self, prefix: str) -> tuple[str, list[tuple[str, str]]]:
        """(the start rule's name, every rule as (name, body)) of the GBNF for this language; names begin `prefix`."""
        states = self._states
        alive = self._alive()
        rules: list[tuple[str, str]] = []
        names: dict[int, str] = {}

        def name(state: int) -> str:
            if state not in names:
                names[state] = f"{prefix}{len(names)}"
            return names[state]

        def literal(text: str) -> str:
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

        def alternatives(state: int, first: bool) -> list[str]:
            seen: set[str] = set()
            out = []
            for symbol, target in states[state].next.items():
                if not isinstance(symbol, _Symbol) or (first and not symbol.is_word):
                    continue
                text = symbol.text if first or not symbol.spaced else " " + symbol.text
                if symbol.is_word:
                    rest = f" ({name(target)})?" if target in alive else ""
                elif target in alive:
                    rest = f" {name(target)}"
                else:
                    continue
                choice = literal(text) + rest
                if choice not in seen:
                    seen.add(choice)
                    out.append(choice)
            return out

        start = f"{prefix}start"
        spans = alternatives(0, first=True)
        answers = [*(literal(word) for word in YES_NO if self.yes_no), *spans]
        if not answers:
            raise ValueError("an empty grounding has no answer to write: check is_empty first")
        rules.append((start, " | ".join(answers)))
        done: set[int] = set()
        while len(done) < len(names):
            for state in [s for s in names if s not in done]:
                done.add(state)
                rules.append((names[state], " | ".join(alternatives(state, first=False))))
        return start, rules

    def _alive(self) -> set[int]:
        """States from which the span can still end on a word: they get a rule of their own."""
        states = self._states
        alive: set[int] = set()
        changed = True
        while changed:
            changed = False
            for index, state in enumerate(states):
                if index in alive:
                    continue
                for symbol, target in state.next.items():
                    if isinstance(symbol, _Symbol) and (symbol.is_word or target in alive):
                        alive.add(index)
                        changed = True
                        break
        alive.discard(0)
        return alive


__all__ = ["YES_NO", "Grounding", "tokens"]
