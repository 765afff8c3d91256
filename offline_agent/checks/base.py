"""The answer-check seam: what a check of a Final looks at (`Candidate`), what it gives back (`Refusal`, or a rewritten
answer), and the protocols a check (`FinalCheck`, `AnswerRewrite`) and the strategy that runs it (`CheckHost`) fit.

A check looks at one Final the model wrote: the question, the answer, the form the question asks for
(answer_form.AnswerForm; what else the question asks, a check reads off it itself), what the run has read (its
steps and Observations), the refusals so far, and, through the run's `DocumentSource` (tools/documents.py), the
documents of the corpus. It either lets the answer stand (None) or refuses it with the Observation the model reads
next (`Refusal`). A check may also ask the host for a model call of its own (a one-word judgment, an answer read
off one document) and show documents as the step's tool result.

An `AnswerRewrite` writes a Final that stands in the form the question asks for ("April 1, 1949" for a bare year
where the question asks when); it never refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from offline_agent.answer_form import AnswerForm
from offline_agent.details import RefusalDetails, Rejection, StepDetails
from offline_agent.grounding import Grounding
from offline_agent.parse import WordParser
from offline_agent.retrieval.sentences import split_sentences
from offline_agent.steps import StepRecord, Trajectory
from offline_agent.tools.documents import DocumentSource, Shown

# The forms of answer a check looks at (AnswerForm.kind): "open" answers are spans of what was read; "yes_no" and
# "choice" answers are a word or an option of the question.
OPEN = frozenset({"open"})
CLOSED = frozenset({"yes_no", "choice"})
EVERY_FORM = OPEN | CLOSED


class RunSoFar(Protocol):
    """What a check reads of the run that wrote the Final (the strategy's loop state fits): what it has read, if
    its grammar is grounded, and its steps. A protocol, so that checks/ sits below agents/ and imports none of it."""

    @property
    def grounding(self) -> Grounding | None: ...

    @property
    def trajectory(self) -> Trajectory: ...


class TurnSoFar(Protocol):
    """What a check reads of the model call that wrote the Final: the tokens its grammar refused in it."""

    @property
    def last_rejections(self) -> list[Rejection]: ...


@dataclass(frozen=True)
class Refusal:
    """A refused Final: the check's reason (recorded on the step), the Observation the model reads, and whether
    the host should also show the refused answer's own document (the answer was a hop on the way, whose document
    most often says what the question asks about it)."""

    reason: str
    observation: str
    show_document: bool = False
    # A document on the way that the refusal showed, (its name, its text as shown, the question asked of it): with
    # read_hop, the host also answers that question from it alone, as the question from a refused answer's own
    # document.
    hop: tuple[str, str, str] | None = None


class CheckHost(Protocol):
    """What a check may ask of the strategy running it: show documents as this step's tool result (the run reads
    them when it reads Observations), and model calls of its own, booked on the step."""

    def show(self, candidate: Candidate, shown: Shown) -> str:
        """Record `shown` as the step's tool result, let a grounded run read it, and return its Observation text."""
        ...

    def fit(self, text: str) -> str:
        """`text` cut to the run's Observation budget."""
        ...

    def read(self, candidate: Candidate, text: str) -> None:
        """Let a grounded run read `text` (a refusal's Observation that quotes documents), so it may answer from it."""
        ...

    def word(self, candidate: Candidate, system: str, user: str, words: WordParser) -> str | None:
        """The model's one word of `words` to `user`, in a call of its own; None when it gave none."""
        ...

    def read_off(
        self, candidate: Candidate, text: str, system: str, user: str, exclude: Sequence[str] = ()
    ) -> str | None:
        """The model's answer to `user` (which shows one document, `text`) under a grammar of that document's spans,
        less the answers the run refused as wrong and those of `exclude`; None when it gave none."""
        ...


@dataclass
class Candidate:
    """One Final under check, and what the checks may read: the run so far and its document source."""

    question: str
    answer: str
    form: AnswerForm
    state: RunSoFar
    record: StepRecord
    turn: TurnSoFar | None
    host: CheckHost
    documents: DocumentSource | None
    # Refusals of the run before this step, in order.
    refusals: list[RefusalDetails]
    # The answers the run refused as wrong (excluded from the grammar), this step's too.
    excluded: Callable[[], list[str]]
    # The reasons an earlier refusal of this same answer gave (normalised), and the reasons any refusal gave.
    earlier: set[str] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)
    exclude_refused: bool = False
    # The type of the step's details (the strategy's own).
    details_type: type[StepDetails] = StepDetails
    _own: dict[bool, str | None] = field(default_factory=dict, repr=False)

    @property
    def details(self) -> StepDetails:
        """The step's details (made on first use), where a check notes what it found (`checked`)."""
        return self.record.ensure_details(self.details_type)

    @property
    def grounded(self) -> bool:
        return self.state.grounding is not None

    def own_document(self, place: bool = False) -> str | None:
        """The text of the document titled with the answer (with `place`, for a question about a place, also one
        titled with the answer and its region: "McLean, Virginia"); None where there is none or no document
        source."""
        if place not in self._own:
            found = self.documents.document(self.answer, place=place) if self.documents is not None else None
            self._own[place] = found
        return self._own[place]

    def seen_titles(self) -> set[str]:
        """Titles of the documents the run has read."""
        steps = self.state.trajectory.steps
        return {title for step in steps if step.details is not None for title in step.details.seen_titles}

    def read_sentences(self) -> list[str]:
        """The sentences of every Observation the run has had, in order; a passage's " ... " between the excerpts
        of a document ends a sentence too."""
        sentences = []
        for step in self.state.trajectory.steps:
            for excerpt in (step.observation or "").split(" ... "):
                sentences.extend(excerpt[start:end] for start, end in split_sentences(excerpt))
        return sentences

    def sentences_holding(self, text: str) -> list[str]:
        """The sentences read that hold `text` as whole words, case aside."""
        holds = as_words(text)
        return [sentence for sentence in self.read_sentences() if holds.search(sentence)]

    def open(self, how: str, text: str, exclude_seen: bool = True, **lookup: Any) -> Shown | None:
        """The documents the source's `how` lookup (open_named, open_found, open_mentioned) shows for `text`, those
        the run has read left out with `exclude_seen`, recorded and read as this step's tool result; None where
        there are none or no document source. The Shown's text is the Observation as fitted to its budget."""
        if self.documents is None:
            return None
        exclude = self.seen_titles() if exclude_seen else frozenset()
        shown = getattr(self.documents, how)(text, exclude=exclude, **lookup)
        if shown is None:
            return None
        return Shown(self.host.show(self, shown), shown.titles, shown.ids, shown.scores)


@runtime_checkable
class FinalCheck(Protocol):
    """One check of a Final. `name` is the reason its refusals record; `forms` the answer forms it looks at;
    `excludes`: a refused answer is wrong in itself, and with exclude_refused it is taken out of later grammars
    (not so for a check that refuses for want of reading); `says_search`: its Observation says what to find and
    shows no document, so with search_after_refusal the next step may only search; `weighs`: it weighs a
    yes/no or choice answer against the documents, and looks at an answer refused before (once a run)."""

    name: str
    forms: frozenset[str]
    excludes: bool
    says_search: bool
    weighs: bool

    def refuse(self, candidate: Candidate) -> Refusal | None:
        """The refusal of `candidate`'s answer, or None to let it stand."""
        ...


@runtime_checkable
class AnswerRewrite(Protocol):
    """A rewrite of a Final in the form the question asks for. With `before_checks`, it applies to the Final before
    the checks weigh it (they weigh the rewritten answer), else to a Final that stands. The first rewrite of a
    stage that applies to the answer is the only one tried."""

    name: str
    before_checks: bool

    def rewrite(self, candidate: Candidate) -> tuple[str, str | None] | None:
        """None where the rewrite does not apply to the answer; else (how the step records it, the answer
        rewritten), the answer None where it applies but finds nothing to write (the answer stands as written)."""
        ...


class Check:
    """A convenient base for a FinalCheck (a check need not subclass it): the attributes' usual values."""

    name = ""
    forms: frozenset[str] = OPEN
    excludes = True
    says_search = False
    weighs = False

    def refuse(self, candidate: Candidate) -> Refusal | None:
        raise NotImplementedError


def as_words(text: str) -> re.Pattern[str]:
    """A pattern that finds `text` in a text as whole words, case aside."""
    return re.compile(rf"(?<!\w){re.escape(text.strip())}(?!\w)", re.IGNORECASE)


def sentence_with(text: str, found: str) -> str:
    """The first sentence of `text` that holds `found` as whole words (`found` itself where none does)."""
    holds = as_words(found)
    return next((text[a:b] for a, b in split_sentences(text) if holds.search(text[a:b])), found)


def refusals_of(steps: Sequence[StepRecord]) -> list[RefusalDetails]:
    """The refusals recorded on `steps`, in order."""
    return [step.details.refusal for step in steps if step.details is not None and step.details.refusal]


def capitalised(name: str) -> str:
    return name[:1].upper() + name[1:]
